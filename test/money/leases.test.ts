// Budget leases through a real gateway (in process, both databases): calls admitted on a lease are charged
// exactly what the exact path charges, once each, with the same usage records; the wallet views count the
// lease as spendable; a shutdown writes every draw and gives the lease back; a monthly-limited key keeps the
// exact path.
import { beforeAll, describe, expect, it } from 'vitest';
import { creditsToNano } from '../../engine/core/money.ts';
import { spendableOf } from '../../engine/money/spendable.ts';
import { nano, PRICES, post, sleep } from '../e2e/e2e.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { documentedLabelValues, labelValues, series } from '../helpers/metrics-text.ts';

const heldLeases = async (t: TestGateway) =>
  (
    await t.gw.db.query<{ n: string; held: string }>(
      `SELECT count(*) AS n, coalesce(sum(amount_nano), 0)::text AS held FROM reservations WHERE wallet_id = $1 AND state = 'held' AND call_id LIKE 'lease:%'`,
      [t.walletId],
    )
  ).rows[0]!;

describe.each(['pglite', 'postgres'] as const)('budget leases [%s]', (kind) => {
  const leasedGateway = useLeasedGateway(kind);
  let t: TestGateway;
  beforeAll(() => {
    t = leasedGateway();
  });

  const body = (i: number) => ({
    model: 'b-5',
    messages: [{ role: 'user', content: `call ${i} [[sim:usage input=1000 output=${100 + i}]]` }],
    max_completion_tokens: 2000,
  });
  const costOf = (i: number) => nano(1000, PRICES['b-5'].input) + nano(100 + i, PRICES['b-5'].output);

  it('charges each call its exact cost, once, whether the lease or the exact path admitted it', async () => {
    const before = await t.balance();
    const headers: bigint[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await post(t, '/v1/chat/completions', body(i));
      expect(res.status).toBe(200);
      headers.push(BigInt(res.headers.get('x-service-charged-nano')!));
      await res.text();
      if (i === 0) await sleep(100); // the first call asks for a lease; let it arrive
    }
    expect(headers).toEqual(Array.from({ length: 30 }, (_, i) => costOf(i)));
    const leased = await heldLeases(t);
    expect(Number(leased!.n)).toBeGreaterThan(0);
    // Most calls took no reservation of their own: the lease admitted them and their charges were draws.
    const own = await t.gw.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM reservations WHERE wallet_id = $1 AND call_id NOT LIKE 'lease:%'`,
      [t.walletId],
    );
    expect(Number(own.rows[0]!.n)).toBeLessThanOrEqual(2);

    await t.gw.leases.flushed();
    const total = headers.reduce((a, b) => a + b, 0n);
    // What left the wallet is exactly the charges: the lease's lots still hold what its records owe, which every view
    // counts as spent, and the raw lots pay when the lease ends.
    const shown = await spendableOf(t.gw.db, t.walletId);
    expect(shown.availableNano + shown.reservedNano).toBe(before - total);
    const records = await t.gw.db.query<{ s: string; n: string }>(
      `SELECT coalesce(sum(charged_nano), 0)::text AS s, count(*) AS n FROM usage_records WHERE wallet_id = $1`,
      [t.walletId],
    );
    expect(records.rows[0]).toMatchObject({ s: String(total), n: '30' });
    await expectJournalAddsUp(t.gw.db, t.walletId);
    // A leased call's charge is one row: its usage record carries the draw's id, and no draw row is written.
    const recorded = await t.gw.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM usage_records WHERE wallet_id = $1 AND transfer_id IS NOT NULL`,
      [t.walletId],
    );
    expect(Number(recorded.rows[0]!.n)).toBeGreaterThanOrEqual(28);
    const draws = await t.gw.db.query<{ n: string }>(`SELECT count(*) AS n FROM reservation_draws`);
    expect(Number(draws.rows[0]!.n)).toBe(0);

    // The wallet views count the lease's unspent hold as spendable.
    const credits = await (await fetch(`${t.url}/v1/credits`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json();
    expect(BigInt(credits.credits) * 1000n).toBe(((before - total) / 1000n) * 1000n);
    expect(credits.reserved_credits).toBe(0);
  });

  it('/metrics shows the calls admitted on leases, the leases held, and no draw left unwritten once flushed', async () => {
    const scrape = async () => (await fetch(`${t.url}/metrics`)).text();
    const admissions = (text: string) => ({
      leased: series(text, 'gateway_lease_admissions', { path: 'leased' }) ?? 0,
      exact: series(text, 'gateway_lease_admissions', { path: 'exact' }) ?? 0,
    });
    const before = admissions(await scrape());
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(t, '/v1/chat/completions', body(100 + i))));
    for (const r of answers) expect(r.status).toBe(200);
    await Promise.all(answers.map((r) => r.text()));
    const text = await scrape();
    const after = admissions(text);
    expect(after.leased + after.exact).toBe(before.leased + before.exact + 10);
    expect(after.leased).toBeGreaterThan(before.leased);
    expect(series(text, 'gateway_leases', { figure: 'held' })).toBeGreaterThan(0);
    expect(series(text, 'gateway_leases', { figure: 'unspent_nano_usd' })).toBeGreaterThan(0);
    expect(series(text, 'gateway_lease_draws_pending')).toBeGreaterThanOrEqual(0);
    // The label values are what a dashboard's query names: exactly the ones docs/operating.md lists.
    expect(labelValues(text, 'gateway_lease_admissions', 'path')).toEqual(['exact', 'leased']);
    expect(documentedLabelValues('gateway_lease_admissions{path}')).toEqual(['exact', 'leased']);
    expect(labelValues(text, 'gateway_leases', 'figure')).toEqual(documentedLabelValues('gateway_leases{figure}'));
    await t.gw.leases.flushed();
    expect(series(await scrape(), 'gateway_lease_draws_pending')).toBe(0);
  });

  it('a key with a monthly limit is admitted on a lease of its own allowance, which its cap counts', async () => {
    const { id, key } = await t.gw.keys.createApiKey(t.walletId, { name: 'capped', monthlyLimitCredits: 1_000_000 });
    const call = async () => {
      const res = await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body(1)),
      });
      expect(res.status).toBe(200);
      await res.text();
    };
    await call();
    for (let i = 0; i < 50; i++) {
      const granted = await t.gw.db.query<{ n: string }>(
        `SELECT count(*) AS n FROM reservations WHERE key_id = $1 AND call_id LIKE 'lease:%' AND state = 'held'`,
        [id],
      );
      if (Number(granted.rows[0]!.n) > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    for (let i = 0; i < 3; i++) await call();
    const keyLeases = await t.gw.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM reservations WHERE key_id = $1 AND call_id LIKE 'lease:%'`,
      [id],
    );
    expect(Number(keyLeases.rows[0]!.n), 'no lease of the key was taken').toBeGreaterThan(0);
    // The key's own lease holds at most its month's allowance, and what its calls used counts on the key.
    const held = await t.gw.db.query<{ s: string }>(
      `SELECT coalesce(sum(amount_nano), 0)::text AS s FROM reservations WHERE key_id = $1 AND state = 'held'`,
      [id],
    );
    const used = await t.gw.db.query<{ s: string }>(`SELECT coalesce(sum(charged_nano), 0)::text AS s FROM usage_daily WHERE key_id = $1`, [
      id,
    ]);
    expect(BigInt(used.rows[0]!.s)).toBeGreaterThan(0n);
    expect(BigInt(held.rows[0]!.s) + BigInt(used.rows[0]!.s)).toBeLessThanOrEqual(1_000_000n * 1000n);
  });

  it('gives every lease back and writes every draw when the gateway closes', async () => {
    for (let i = 0; i < 5; i++) await (await post(t, '/v1/chat/completions', body(i))).text();
    await t.gw.leases.returnWallet(t.walletId);
    expect((await heldLeases(t)).n).toBe('0');
    expect((await t.gw.ledger.balance(t.walletId)).reservedNano).toBe(0n);
    await expectJournalAddsUp(t.gw.db, t.walletId);
  });

  // 5,000 credits: a quarter of it holds fewer than four such calls.
  it('a wallet too small to lease is served on the exact path', async () => {
    const small = await t.gw.ledger.createWallet({ credits: 5_000 });
    const { key } = await t.gw.keys.createApiKey(small.id, { name: 'small' });
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 100 }),
    });
    expect(res.status).toBe(200);
    await res.text();
    await sleep(100);
    const leases = await t.gw.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM reservations WHERE wallet_id = $1 AND call_id LIKE 'lease:%'`,
      [small.id],
    );
    expect(leases.rows[0]!.n).toBe('0');
    expect(creditsToNano(5_000) - (await t.gw.ledger.balance(small.id)).availableNano).toBeGreaterThan(0n);
  });
});
