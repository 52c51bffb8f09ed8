// Attack (budget leases, and the exact path too): a usage figure the usage_records columns cannot hold. The
// usage record is written in the charge's own transaction, so a record the database refuses undid the charge:
// the call was answered (x-service-charged-nano said what it cost) and never charged.
//   - leased: the draw was retried every 5 s forever, never written; the lease could not be given back (it
//     waits for its draws), expired, and the sweeper returned the money; the process's count of draws not
//     written never came down (max_pending_draws of them and no call is leased any more).
//   - exact path: the settle was retried in the background forever; the hold expired after reservation_ttl_ms.
// Measured before the fix on `npm start` with PostgreSQL, leases on: two calls of vendor B reporting
// reasoning_tokens 1e20 ("value out of range for type bigint"), each answered with x-service-charged-nano
// 2,250,000, charged 0; the lease expired 60 s later with both amounts returned to the wallet.
// The figures are the vendor's word (the chat usage reader takes any finite number), so the writer clamps them.
import { beforeAll, describe, expect, it } from 'vitest';
import { nano, PRICES, post, sleep } from '../e2e/e2e.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp, walletView } from '../helpers/ledger.ts';

describe.each(['pglite', 'postgres'] as const)('usage figures past what the usage record columns hold [%s]', (kind) => {
  const leasedGateway = useLeasedGateway(kind);
  let t: TestGateway;
  beforeAll(() => {
    t = leasedGateway();
  });

  const body = (i: number) => ({
    model: 'b-5',
    max_completion_tokens: 2000,
    messages: [{ role: 'user', content: `call ${i} [[sim:usage input=1000 output=100 reasoning=100000000000000000000]]` }],
  });
  const COST = nano(1000, PRICES['b-5'].input) + nano(100, PRICES['b-5'].output);

  it('every call answered is charged what its answer said, leased or exact, and nothing is left unwritten', async () => {
    const before = await walletView(t.gw, t.walletId);
    const { key: dailyKey } = await t.gw.keys.createApiKey(t.walletId, { name: 'exact path', dailyLimitCredits: 1_000_000 });
    let total = 0n;
    for (let i = 0; i < 6; i++) {
      // The daily-limited key keeps the exact path; the dev key's calls are admitted on a lease.
      const res =
        i === 5 ? await post({ ...t, apiKey: dailyKey }, '/v1/chat/completions', body(i)) : await post(t, '/v1/chat/completions', body(i));
      expect(res.status).toBe(200);
      await res.text();
      expect(BigInt(res.headers.get('x-service-charged-nano')!)).toBe(COST);
      total += COST;
      if (i === 0) await sleep(100); // the first call asks for a lease; let it arrive
    }
    const flushed = await Promise.race([t.gw.leases.flushed().then(() => true), sleep(3_000).then(() => false)]);
    expect(flushed).toBe(true);
    expect(t.gw.leases.stats().pendingDraws).toBe(0);
    // The view: the lease is still held, and its lots pay what its records owe when it ends.
    const after = await walletView(t.gw, t.walletId);
    expect(after.heldNano).toBe(0n);
    expect(before.spendableNano - after.spendableNano).toBe(total);
    const records = await t.gw.db.query<{ n: string; s: string; r: string }>(
      `SELECT count(*)::text AS n, sum(charged_nano)::text AS s, max(reasoning_tokens)::text AS r FROM usage_records WHERE wallet_id = $1`,
      [t.walletId],
    );
    expect(records.rows[0]).toEqual({ n: '6', s: String(total), r: String(Number.MAX_SAFE_INTEGER) });
    const held = await t.gw.db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM reservations WHERE wallet_id = $1 AND state = 'held' AND call_id NOT LIKE 'lease:%'`,
      [t.walletId],
    );
    expect(held.rows[0]!.n).toBe('0');
    await expectJournalAddsUp(t.gw.db, t.walletId);
  });
});
