// Issue 26: the gateway's own vendor credential, missing or refused, is the operator's problem, and the gateway
// says so: a warning at start and on /readyz for a vendor with routes and no key; a 502 upstream_error naming
// the refused credential (never the vendor's 401, which reads as the client's key being wrong), logged at
// error level, counted in /metrics, with no fallback to routes sent the same credential. Nothing is charged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_OPEN_TO_LOOPBACK, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { series } from '../helpers/metrics-text.ts';
import { A_VERSION, post } from './e2e.ts';

const USER = [{ role: 'user', content: 'Hello credentials' }];
const errorLines: { level: number; msg: string; vendor?: string; status?: number }[] = [];

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({
    // Vendor A has its routes and no key; vendor B's key is one the vendor does not take.
    env: {
      GATEWAY_VENDOR_A_KEY: '',
      GATEWAY_VENDOR_B_KEY: 'revoked-at-the-vendor',
      GATEWAY_VIDEO_POLL_MS: '50',
      ...METRICS_OPEN_TO_LOOPBACK,
    },
    simulator: { acceptKeys: ['vendor-c-secret', 'vendor-d-secret', 'vendor-e-secret'] },
    logger: {
      level: 'info',
      stream: {
        write(line: string) {
          const o = JSON.parse(line) as (typeof errorLines)[number];
          if (o.level >= 50) errorLines.push(o);
        },
      },
    },
  });
});
afterAll(() => t?.close());

async function metric(vendor: string): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  return series(text, 'gateway_vendor_credential_refusals_total', { vendor }) ?? 0;
}

describe('vendor credentials', () => {
  it('a vendor with routes and no key is a warning of the start and on /readyz, which stays ready', async () => {
    expect(t.gw.warnings).toEqual(['vendor A has routes (GATEWAY_VENDOR_A_URLS) but no credential (GATEWAY_VENDOR_A_KEY is not set)']);
    const res = await fetch(`${t.url}/readyz`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { warnings: string[] }).warnings).toEqual(t.gw.warnings);
  });

  for (const [vendor, model, door] of [
    ['a', 'a-top-5.5', '/v1/messages'],
    ['b', 'b-5', '/v1/chat/completions'],
  ] as const) {
    it(`vendor ${vendor.toUpperCase()} refusing the gateway's credential: 502 upstream_error, no fallback, logged, counted, not charged`, async () => {
      const before = {
        received: t.received(vendor).length,
        balance: await t.balance(),
        counted: await metric(vendor),
        logged: errorLines.length,
      };
      const body = door === '/v1/messages' ? { model, max_tokens: 64, messages: USER } : { model, messages: USER };
      const res = await post(t, door, body, A_VERSION);
      expect(res.status).toBe(502);
      const json = (await res.json()) as { error: { type: string; message: string } };
      expect(json.error.type).toBe('upstream_error');
      expect(json.error.message).toContain(`Vendor ${vendor.toUpperCase()} refused the gateway's credential`);
      expect(json.error.message).toContain('your API key was accepted');
      // Route 1 is sent the same credential: not asked.
      expect(
        t
          .received(vendor)
          .slice(before.received)
          .map((r) => r.route),
      ).toEqual([`${vendor}0`]);
      expect(await t.balance()).toBe(before.balance);
      expect(await metric(vendor)).toBe(before.counted + 1);
      expect(errorLines.slice(before.logged)).toContainEqual(
        expect.objectContaining({ vendor, status: 401, msg: expect.stringContaining(`GATEWAY_VENDOR_${vendor.toUpperCase()}_KEY`) }),
      );
    });
  }

  it('a 403 to the gateway is the same refusal; other vendors are unaffected', async () => {
    const n = t.received('c').length;
    t.sim.inject('c0', { kind: 'status', status: 403 });
    const refused = await post(t, '/v1/chat/completions', { model: 'c-flash-3', messages: USER });
    expect(refused.status).toBe(502);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('(HTTP 403)');
    expect(
      t
        .received('c')
        .slice(n)
        .map((r) => r.route),
    ).toEqual(['c0']);
    const served = await post(t, '/v1/chat/completions', { model: 'c-flash-3', messages: USER });
    expect(served.status).toBe(200);
  });

  it('a video job whose create the vendor refuses for the credential fails saying so, on one route, charged nothing', async () => {
    const before = { creates: t.received('d').filter((r) => r.path === '/v1/videos/generations').length, balance: await t.balance() };
    t.sim.inject('d0', { kind: 'status', status: 401 });
    const created = await post(t, '/v1/videos', { model: 'video-d-1', prompt: 'a lighthouse', seconds: '4', size: '1280x720' });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    let job: { status: string; error: { code: string; message: string } | null } | undefined;
    for (let i = 0; i < 200 && job?.status !== 'failed'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      job = (await (await fetch(`${t.url}/v1/videos/${id}`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json()) as typeof job;
    }
    expect(job?.status).toBe('failed');
    expect(job?.error?.message).toContain("Vendor D refused the gateway's credential for it (HTTP 401)");
    const creates = t
      .received('d')
      .filter((r) => r.path === '/v1/videos/generations')
      .slice(before.creates);
    expect(creates.map((r) => r.route)).toEqual(['d0']);
    expect(await t.balance()).toBe(before.balance);
  });
});
