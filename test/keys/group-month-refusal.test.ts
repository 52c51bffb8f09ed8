// A grouped key's call refused because its GROUP's month is used up (or lowered below its use) is told so: the
// 429 names the group and its monthly limit, never the key's own monthly limit, whether the client sent an output
// limit or left it to the gateway (which then fits the output to what the key, its group and the wallet leave).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

async function call(t: TestGateway, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const message = (text: string) => ({ role: 'user', content: `${text} [[sim:long=40]]` });
/** With an output limit sent, and without one (the gateway fits the output to what is left). */
const bodies = {
  sent: { model: 'b-6', max_completion_tokens: 400, messages: [message('sent')] },
  left: { model: 'b-6', messages: [message('left')] },
};

// One gateway and wallet for both: each test makes its own group and keys.
let t: TestGateway;
let mgmt: string;
beforeAll(async () => {
  t = await startTestGateway({ credits: 100_000_000 });
  mgmt = (await t.gw.keys.createManagementKey(t.walletId)).key;
}, 60_000);
afterAll(async () => t?.close());

describe("a grouped key refused by its group's month", () => {
  /** A group and two keys in it; the first key's call uses some of the group's month. */
  async function usedGroup(own: number | null) {
    const g = await call(t, 'POST', '/v1/key-groups', mgmt, { name: '2반', monthly_limit_credits: 1_000_000 });
    const made = await call(t, 'POST', '/v1/keys', mgmt, { count: 2, name_prefix: 's', group_id: g.body.id, monthly_limit_credits: own });
    const [k1, k2] = made.body.data.map((k: { key: string }) => k.key as string);
    expect((await call(t, 'POST', '/v1/chat/completions', k1, bodies.sent)).status).toBe(200);
    const used = (await call(t, 'GET', '/v1/key', k1)).body.group.month.used_credits as number;
    /** Lowers the group's month to leave `left` credits of it. */
    const leave = async (left: number) =>
      expect((await call(t, 'PATCH', `/v1/key-groups/${g.body.id}`, mgmt, { monthly_limit_credits: used + left })).status).toBe(200);
    return { k2, leave };
  }

  for (const own of [null, 5_000_000] as const) {
    it(`used up, it is told the group's monthly limit, not the key's (key's own month: ${own ?? 'none'})`, async () => {
      const { k2, leave } = await usedGroup(own);
      await leave(0);
      for (const [how, body] of Object.entries(bodies)) {
        const r = await call(t, 'POST', '/v1/chat/completions', k2, body);
        expect(r.status, how).toBe(429);
        expect(r.body.error.type, how).toBe('key_limit_exceeded');
        expect(r.body.error.message, how).toContain("group '2반'");
        expect(r.body.error.message, how).not.toMatch(/this key's monthly limit|raise the key's/);
      }
      // Left to the gateway, no output limit would fit: it says so rather than "lower max_tokens".
      const left = await call(t, 'POST', '/v1/chat/completions', k2, bodies.left);
      expect(left.body.error.message).toMatch(
        /^Not even the shortest answer fits: .*the monthly limit of this key's group '2반' leaves 0 credits/,
      );
    });

    it(`with some of its month left, a call leaving the output limit to the gateway is fitted to it (key's own month: ${own ?? 'none'})`, async () => {
      const { k2, leave } = await usedGroup(own);
      await leave(2_000);
      const res = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k2}`, 'content-type': 'application/json' },
        body: JSON.stringify(bodies.left),
      });
      expect(res.status).toBe(200);
      // b-6 writes 30 credits per 1,000 output tokens: 2,000 credits hold some 66,000 of them, far below its 128,000.
      const fitted = Number(res.headers.get('x-service-max-tokens'));
      expect(fitted).toBeGreaterThan(0);
      expect(fitted).toBeLessThan(128_000);
      await res.arrayBuffer();
    });
  }
});

describe("a grouped key refused by its group's day", () => {
  for (const own of [null, 5_000_000] as const) {
    it(`used up, it is told the group's daily limit, not the key's (key's own day: ${own ?? 'none'})`, async () => {
      const g = await call(t, 'POST', '/v1/key-groups', mgmt, { name: `3반-${own}`, daily_limit_credits: 1_000_000 });
      const made = await call(t, 'POST', '/v1/keys', mgmt, { count: 2, name_prefix: 'd', group_id: g.body.id, daily_limit_credits: own });
      const [k1, k2] = made.body.data.map((k: { key: string }) => k.key as string);
      expect((await call(t, 'POST', '/v1/chat/completions', k1, bodies.sent)).status).toBe(200);
      const used = (await call(t, 'GET', '/v1/key', k1)).body.group.day.used_credits as number;
      expect((await call(t, 'PATCH', `/v1/key-groups/${g.body.id}`, mgmt, { daily_limit_credits: used })).status).toBe(200);
      const r = await call(t, 'POST', '/v1/chat/completions', k2, bodies.left);
      expect(r.status).toBe(429);
      expect(r.body.error.type).toBe('key_limit_exceeded');
      expect(r.body.error.message).toContain(`the daily limit of this key's group '3반-${own}'`);
      expect(r.body.error.message).not.toMatch(/this key's daily limit|raise the key's/);
    });
  }
});
