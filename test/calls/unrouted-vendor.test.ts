// Issue 40: with some vendors' URLs set, the simulator is off and the others have no route. The operator reads
// which on /readyz (and in the start's warnings); a client calling such a vendor's model gets a 502 naming the
// variable to set and saying the simulator is off, and is charged nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ env: { GATEWAY_VENDOR_A_URLS: '' } });
});
afterAll(() => t?.close());

describe('a vendor with no route and no simulator', () => {
  it('is listed by /readyz, per vendor and in its warnings, while the gateway stays ready', async () => {
    const res = await fetch(`${t.url}/readyz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { vendors: Record<string, unknown>; warnings: string[] };
    expect(body.vendors.a).toEqual({ routes: 0, simulated: false });
    expect(body.vendors.b).toEqual({ routes: 2, simulated: false });
    expect(body.warnings).toEqual([
      expect.stringMatching(/^vendor A has no routes .*GATEWAY_VENDOR_A_URLS is set, or GATEWAY_SIMULATE=1$/),
    ]);
  });

  it('answers its calls 502 naming GATEWAY_VENDOR_A_URLS and the simulator, and charges nothing', async () => {
    const before = await t.balance();
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a-top-5.5', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status).toBe(502);
    const { error } = (await res.json()) as { error: { type: string; message: string } };
    expect(error.type).toBe('upstream_error');
    expect(error.message).toContain('GATEWAY_VENDOR_A_URLS');
    expect(error.message).toContain('simulator is off');
    expect(await t.balance()).toBe(before);
    expect(t.received('a')).toEqual([]);
  });
});
