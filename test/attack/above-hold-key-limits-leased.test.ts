// Attack (wt-attack): usage far above the hold on a key with monthly and daily limits, budget leases on
// (PGlite). docs/api.md: usage above the hold counts on the key's limits in full, and the key is refused from then
// on. Three calls at once, each held for 300 output tokens of b-6 and reported at 20,000 (600,200 credits each).
import { describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';

const gateway = useLeasedGateway('pglite', 20_000_000);

describe('usage above the hold on a limited key, leases on', () => {
  it('counts in full on the day and the month, and the key is refused after', async () => {
    const t = gateway();
    const { key } = await t.gw.keys.createApiKey(t.walletId, { name: 'lim', monthlyLimitCredits: 1_000_000, dailyLimitCredits: 700_000 });
    const k = { ...t, apiKey: key };
    const before = await t.balance();
    const body = {
      model: 'b-6',
      max_completion_tokens: 300,
      messages: [{ role: 'user', content: 'x [[sim:usage input=40 output=20000]]' }],
    };
    const answers = await Promise.all([0, 1, 2].map(() => post(k, '/v1/chat/completions', body)));
    const statuses = answers.map((r) => r.status);
    await Promise.all(answers.map((r) => r.text()));
    await t.gw.leases.flushed();
    await sleep(300);
    const status = (await (await fetch(`${t.url}/v1/key`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
    const spent = before - (await t.balance());
    const next = await post(k, '/v1/chat/completions', {
      ...body,
      messages: [{ role: 'user', content: 'small' }],
      max_completion_tokens: 5,
    });
    console.log({ statuses, month: status.month, day: status.day, spent: String(spent), next: next.status });
    const served = statuses.filter((s) => s === 200).length;
    expect(served).toBeGreaterThan(0);
    expect(spent).toBe(BigInt(served) * 600_200_000n);
    expect(status.month.used_credits).toBe(served * 600_200);
    expect(status.day.used_credits).toBe(served * 600_200);
    expect(next.status).toBe(429);
  }, 30_000);
});
