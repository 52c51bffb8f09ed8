// Issue 26: a vendor given routes and no credential is found by the operator at start, not by the clients:
// `npm start` prints a warning naming the variables, and /readyz lists it while the gateway stays ready.
import { afterAll, describe, expect, it } from 'vitest';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

let g: ChildGateway | undefined;
afterAll(() => g?.remove());

describe('a vendor with routes and no credential', () => {
  it('is a warning of the start and of /readyz', async () => {
    const env: Record<string, string> = { GATEWAY_VENDOR_A_URLS: 'http://127.0.0.1:9', GATEWAY_SIMULATE: '1' };
    g = await startChildGateway(env);
    const expected = 'vendor A has routes (GATEWAY_VENDOR_A_URLS) but no credential (GATEWAY_VENDOR_A_KEY is not set)';
    await g.waitFor(/gateway listening on/);
    await g.waitFor(new RegExp(`warning: ${expected.replace(/[()]/g, '\\$&')}`));
    const ready = await fetch(`${g.base}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { warnings?: string[] }).warnings).toEqual([expected]);
  }, 120_000);
});
