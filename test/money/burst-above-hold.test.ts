// A burst on the shipped money path whose usage comes back far above the hold on every tenth call, until the
// wallet runs dry (issue 25, found as a client would: a lease's release gave back money its draws had already
// taken, then `lot … would go negative` failed calls with 503, answered calls went uncharged, and the sweeper
// failed for every wallet). Every answered call must be charged exactly once, no reservation may give back or
// charge more than it held on a lot, nothing answers 5xx, and the sweeper still works for every wallet.
import { describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp, journalSum } from '../helpers/ledger.ts';

const CALLS = 150;
const AT_ONCE = 30;
const kinds: ('pglite' | 'postgres')[] = ['pglite', ...(postgresAvailability.ok || REQUIRE_POSTGRES ? (['postgres'] as const) : [])];

for (const kind of kinds) {
  describe(`a burst whose usage passes its hold on every tenth call [${kind}]`, () => {
    const gateway = useLeasedGateway(kind, 1_000_000); // $1: the big calls drain it
    it('charges every answered call once, never releases past a hold, answers no 5xx, and sweeps every wallet after', async () => {
      const t = gateway();
      const statuses: number[] = [];
      const answered = new Map<string, bigint>();
      const call = async (i: number) => {
        const big = i % 10 === 9;
        const res = await post(t, '/v1/chat/completions', {
          model: 'b-4.1-mini',
          ...(big ? { max_tokens: 10 } : {}),
          messages: [{ role: 'user', content: `call ${i}${big ? ' [[sim:usage output=50000]]' : ''}` }],
        });
        statuses.push(res.status);
        await res.text();
        if (res.status === 200) answered.set(res.headers.get('x-request-id')!, BigInt(res.headers.get('x-service-charged-nano') ?? '-1'));
      };
      for (let start = 0; start < CALLS; start += AT_ONCE) await Promise.all(Array.from({ length: AT_ONCE }, (_, j) => call(start + j)));

      expect(
        statuses.filter((s) => s >= 500),
        'a call answered 5xx',
      ).toEqual([]);
      expect(statuses.filter((s) => s !== 200 && s !== 402)).toEqual([]);
      expect(answered.size).toBeGreaterThan(AT_ONCE);
      expect(statuses, 'the burst did not drain the wallet').toContain(402);
      const db = t.gw.db;
      // Every answer's end waited for its charge: the records are there now, one per answered call.
      const records = await db.query<{ request_id: string; charged_nano: string }>(
        'SELECT request_id, charged_nano::text FROM usage_records WHERE wallet_id = $1',
        [t.walletId],
      );
      const ids = records.rows.map((r) => r.request_id);
      expect(new Set(ids).size, 'a call charged twice').toBe(ids.length);
      expect(
        ids.filter((id) => !answered.has(id)),
        'charged for a call not answered',
      ).toEqual([]);
      expect(
        [...answered.keys()].filter((id) => !ids.includes(id)),
        'answered and not charged',
      ).toEqual([]);
      for (const r of records.rows) expect(BigInt(r.charged_nano), r.request_id).toBe(answered.get(r.request_id));
      // What the records say was charged is what the journal charged.
      const journal = await journalSum(t.gw.db, t.walletId);
      expect(journal.chargedNano).toBe(records.rows.reduce((a, r) => a + BigInt(r.charged_nano), 0n));
      // No reservation charged or gave back more than it held on a lot.
      const past = await db.query<{ reservation_id: string; lot_id: string; left: string }>(
        `SELECT reservation_id, lot_id, sum(CASE kind WHEN 'reserve' THEN amount_nano ELSE -amount_nano END)::text AS left
           FROM ledger_journal WHERE wallet_id = $1 AND reservation_id IS NOT NULL GROUP BY reservation_id, lot_id
         HAVING sum(CASE kind WHEN 'reserve' THEN amount_nano ELSE -amount_nano END) < 0`,
        [t.walletId],
      );
      expect(past.rows, 'a hold gave back or charged more than it held').toEqual([]);
      await expectJournalAddsUp(t.gw.db, t.walletId);

      // The sweeper still works, for this wallet and another: expire everything held as if the leases' process died.
      const other = await t.gw.ledger.createWallet({ credits: 1_000 });
      const held = await t.gw.ledger.reserve({ walletId: other.id, vendor: 'b', amountNano: 500_000n, callId: 'left-behind' });
      expect(held.ok).toBe(true);
      await t.gw.leases.flushed();
      const swept = await t.gw.ledger.sweepExpired(new Date('2100-01-01T00:00:00Z'));
      expect(swept).toBeGreaterThan(0);
      for (const w of [t.walletId, other.id]) {
        const bal = await t.gw.ledger.balance(w);
        expect(bal.reservedNano, w).toBe(0n);
        await expectJournalAddsUp(t.gw.db, w);
      }
    }, 120_000);
  });
}
