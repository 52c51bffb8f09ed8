// Charge rows, grouped: the settles of one ledger batch hand their charge rows to each writer at once (one
// statement per writer), and a row that fails still fails only its own settle.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { type ChargedItem, type ChargeRowWriter, chargeRow } from '../../engine/db/charge-rows.ts';
import type { Db } from '../../engine/db/db.ts';
import { createKeyService } from '../../engine/keys/index.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import { createLedger, type Reservation } from '../../engine/money/ledger.ts';
import { dailyRollupWriter } from '../../engine/usage/daily-rollup.ts';
import { usageRecordStorage } from '../../engine/usage/record-storage.ts';
import { usageRecordRows, usageRecordWriter } from '../../engine/usage/records.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp, journalSum } from '../helpers/ledger.ts';
import { recordDraft } from '../helpers/usage-drafts.ts';

/** Counts the statements a writer is asked for, and the rows in each. */
function counted<T>(w: ChargeRowWriter<T>): { writer: ChargeRowWriter<T>; calls: number[] } {
  const calls: number[] = [];
  return {
    calls,
    writer: {
      name: w.name,
      statement: (rows: readonly ChargedItem<T>[]) => {
        calls.push(rows.length);
        return w.statement(rows);
      },
    },
  };
}

const usage = {
  input_tokens: 100,
  output_tokens: 20,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  web_search_calls: 0,
  file_search_calls: 0,
};

/** `db` with the statements of its transactions written down. */
function recordingTransactions(db: Db): { db: Db; statements: string[] } {
  const statements: string[] = [];
  const spy = new Proxy(db, {
    get(target, prop) {
      if (prop === 'transaction') {
        return (fn: Parameters<Db['transaction']>[0], opts?: { flushWal?: boolean }) =>
          target.transaction(
            (tx) =>
              fn({
                query: (sql, params) => (statements.push(sql), tx.query(sql, params)),
                queryAndCommit: (sql, params) => (statements.push(sql), tx.queryAndCommit(sql, params)),
              }),
            opts,
          );
      }
      const v = Reflect.get(target, prop);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { db: spy, statements };
}

describeEachDatabase('charge rows of a batch', (getDb: () => Db) => {
  const clock = fixedClock('2026-05-01T00:00:00Z');
  const finishedAt = new Date('2026-05-01T00:00:00Z');

  async function setup(holds: number) {
    // The records' day must have its partition on PostgreSQL, as the gateway's start makes it.
    await (await usageRecordStorage(getDb())).prepare(finishedAt);
    const sizes: number[] = [];
    const ledger = createLedger(getDb(), { clock, owner: 'rows-test', onBatch: (n) => sizes.push(n) });
    const keys = createKeyService(getDb(), { clock });
    const w = await ledger.createWallet({ credits: 1_000 });
    const key = await keys.createApiKey(w.id, { monthlyLimitCredits: null, dailyLimitCredits: null, expiresOn: null });
    const auth = await keys.authenticate(key.key, 'api');
    const held: Reservation[] = [];
    for (let i = 0; i < holds; i++) {
      const r = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 10_000n, callId: `c-${i}` });
      if (!r.ok) throw new Error('refused');
      held.push(r.reservation);
    }
    const draft = (i: number) => recordDraft(w.id, auth.keyId, finishedAt, `req-${i}`, usage);
    // The key's day and month figures, as its quotas read them (sums of its usage_daily rows).
    const used = async () => {
      const u = (await keys.quota.usage([auth.keyId], finishedAt)).get(auth.keyId)!;
      return { day: u.dayNano.toString(), month: u.monthNano.toString() };
    };
    const records = async () =>
      (
        await getDb().query<{ request_id: string; charged_nano: string }>(
          'SELECT request_id, charged_nano::text FROM usage_records WHERE wallet_id = $1 ORDER BY request_id',
          [w.id],
        )
      ).rows;
    return { ledger, keys, walletId: w.id, keyId: auth.keyId, held, draft, used, records, sizes };
  }

  it("the settles of one batch write each writer's rows with one statement, each row with its own charge", async () => {
    const s = await setup(20);
    const records = counted(usageRecordWriter);
    const rollup = counted(dailyRollupWriter);
    const charges = s.held.map((_, i) => BigInt(1_000 + i));
    s.sizes.length = 0;
    const out = await Promise.all(
      s.held.map((r, i) => s.ledger.settle(r, charges[i]!, [chargeRow(records.writer, s.draft(i)), chargeRow(rollup.writer, s.draft(i))])),
    );
    expect(s.sizes).toEqual([20]);
    expect(out.map((o) => o.chargedNano)).toEqual(charges);
    expect(records.calls).toEqual([20]); // one statement for twenty settles
    expect(rollup.calls).toEqual([20]);
    const total = charges.reduce((a, b) => a + b, 0n).toString();
    expect(await s.used()).toEqual({ day: total, month: total });
    const recs = await s.records();
    expect(recs).toHaveLength(20);
    for (const [i, c] of charges.entries()) expect(recs.find((r) => r.request_id === `req-${i}`)?.charged_nano).toBe(c.toString());
    await expectJournalAddsUp(getDb(), s.walletId);
  });

  it('a settle repeated in the same batch writes its rows once; a zero charge counts nothing on the key', async () => {
    const s = await setup(2);
    const rowsOf = (i: number) => usageRecordRows(s.draft(i));
    await Promise.all([
      s.ledger.settle(s.held[0]!, 700n, rowsOf(0)),
      s.ledger.settle(s.held[0]!, 700n, rowsOf(0)),
      s.ledger.settle(s.held[1]!, 0n, rowsOf(1)),
    ]);
    expect(await s.used()).toEqual({ day: '700', month: '700' });
    expect(await s.records()).toEqual([
      { request_id: 'req-0', charged_nano: '700' },
      { request_id: 'req-1', charged_nano: '0' },
    ]);
  });

  it("a grouped write that fails on one settle's row fails that settle alone; the others commit with their rows, once", async () => {
    const s = await setup(6);
    // A writer counting the key's use (a usage_daily row, which the key's figures sum) whose statement fails in
    // SQL (aborting the transaction) when it carries the row marked bad: its count is divided by 0. The records
    // go without their own rollup row, so the key's figures are this writer's alone.
    const tries: number[] = [];
    const picky: ChargeRowWriter<{ bad: boolean; n: number }> = {
      name: 'picky',
      statement(rows) {
        tries.push(rows.length);
        const total = rows.reduce((a, r) => a + r.chargedNano, 0n).toString();
        return {
          sql: `INSERT INTO usage_daily AS d (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens)
                VALUES ('2026-05-01', $1, $2, 'picky', $5::bigint, $3::bigint / $4::bigint, 0, 0, 0, 0)
                ON CONFLICT (wallet_id, day, key_id, model) DO UPDATE SET calls = d.calls + EXCLUDED.calls, charged_nano = d.charged_nano + EXCLUDED.charged_nano`,
          params: [s.walletId, s.keyId, total, rows.some((r) => r.item.bad) ? '0' : '1', rows.length],
        };
      },
    };
    s.sizes.length = 0;
    const out = await Promise.allSettled(
      s.held.map((r, i) =>
        s.ledger.settle(r, 1_000n, [chargeRow(picky, { bad: i === 3, n: i }), chargeRow(usageRecordWriter, s.draft(i))]),
      ),
    );
    expect(tries[0]).toBe(6); // grouped first
    expect(out.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(out[3]).toMatchObject({ reason: { code: '22012' } });
    // five settles counted once each, the failed one neither counted nor recorded nor charged
    expect(await s.used()).toEqual({ day: '5000', month: '5000' });
    expect((await s.records()).map((r) => r.request_id)).toEqual(['req-0', 'req-1', 'req-2', 'req-4', 'req-5']);
    const row = await getDb().query<{ state: string }>('SELECT state FROM reservations WHERE id = $1', [s.held[3]!.id]);
    expect(row.rows[0]!.state).toBe('held');
    expect((await journalSum(getDb(), s.walletId)).chargedNano).toBe(5_000n);
    await expectJournalAddsUp(getDb(), s.walletId);
  });

  it('draws (a lease paying calls) write their rows grouped too', async () => {
    const s = await setup(1);
    const rollup = counted(dailyRollupWriter);
    const out = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        s.ledger.draw(s.held[0]!, 300n, `draw-${i}`, [chargeRow(usageRecordWriter, s.draft(i)), chargeRow(rollup.writer, s.draft(i))]),
      ),
    );
    expect(out.every((o) => o.chargedNano === 300n)).toBe(true);
    expect(rollup.calls).toEqual([10]);
    expect(await s.used()).toEqual({ day: '3000', month: '3000' });
    expect(await s.records()).toHaveLength(10);
  });

  it("a draw's money, usage record and its rollup row (the key's use) are one statement after the locks: three in its transaction", async () => {
    const s = await setup(1);
    const spied = recordingTransactions(getDb());
    const ledger = createLedger(spied.db, { clock, owner: 'rows-test' });
    const out = await ledger.draw(s.held[0]!, 400n, 'draw-one', usageRecordRows(s.draft(0)));
    expect(out.chargedNano).toBe(400n);
    const statements = spied.statements.filter((sql) => !sql.startsWith('SAVEPOINT'));
    expect(statements).toHaveLength(3); // lock; holds and draws written before; the write
    expect(statements[2]).toContain('INSERT INTO ledger_journal');
    expect(statements[2]).toContain('INSERT INTO usage_records');
    expect(statements[2]).toContain('INSERT INTO usage_daily');
    expect(statements.join('\n')).not.toContain('api_key'); // no row of the key's own, locked or written
    expect(await s.used()).toEqual({ day: '400', month: '400' });
    expect(await s.records()).toEqual([{ request_id: 'req-0', charged_nano: '400' }]);
    await expectJournalAddsUp(getDb(), s.walletId);
  });

  it("a draw's usage record is its charge's one row: it carries the draw's id, and a draw written again with it charges nothing", async () => {
    const s = await setup(1);
    const rows = usageRecordRows(s.draft(0));
    expect(await s.ledger.draw(s.held[0]!, 400n, 'draw-recorded', rows)).toMatchObject({ chargedNano: 400n, alreadyFinished: false });
    // The retry after an unclear commit: the same draw with the same rows.
    expect(await s.ledger.draw(s.held[0]!, 400n, 'draw-recorded', rows)).toMatchObject({ chargedNano: 0n, alreadyFinished: true });
    const rowsOf = async (sql: string) => (await getDb().query<{ n: string }>(sql, ['draw-recorded'])).rows[0]?.n;
    expect(await rowsOf('SELECT count(*)::text AS n FROM usage_records WHERE transfer_id = $1')).toBe('1');
    expect(await rowsOf('SELECT count(*)::text AS n FROM reservation_draws WHERE draw_id = $1')).toBe('0');
    expect(await s.used()).toEqual({ day: '400', month: '400' });
    // A draw whose rows keep no record of it (its usage record refused for good: only its rollup row, the key's use,
    // is left) writes a draw row, and is known by it: counted once.
    const rollupOnly = [chargeRow(dailyRollupWriter, s.draft(1))];
    expect(await s.ledger.draw(s.held[0]!, 100n, 'draw-unrecorded', rollupOnly)).toMatchObject({ chargedNano: 100n });
    expect(await s.ledger.draw(s.held[0]!, 100n, 'draw-unrecorded', rollupOnly)).toMatchObject({ chargedNano: 0n });
    expect((await getDb().query('SELECT 1 FROM reservation_draws WHERE draw_id = $1', ['draw-unrecorded'])).rows).toHaveLength(1);
    expect(await s.used()).toEqual({ day: '500', month: '500' });
    await expectJournalAddsUp(getDb(), s.walletId);
  });
  // A draw owed on its lease holds the lease only FOR SHARE, which does not wait for a replay of it the way a lock for
  // update does: so its first try looks for an earlier write too, in the snapshot taken once the lock is held.
  it("a draw's first try and the charge writer's retry after an unclear commit both look for an earlier write, and charge once", async () => {
    const s = await setup(1);
    const spied = recordingTransactions(getDb());
    const ledger = createLedger(spied.db, { clock, owner: 'rows-test' });
    const rows = usageRecordRows(s.draft(0));
    const writer = new ChargeWriter(() => ({ warn() {}, error() {} }), { firstMs: 1, maxMs: 1, attempts: 3 });
    const tries: { firstTry: boolean; statements: string[] }[] = [];
    const charge = writer.submit('draw-unclear', async (firstTry) => {
      spied.statements.length = 0;
      const w = await ledger.draw(s.held[0]!, 400n, 'draw-unclear', rows, { firstTry });
      tries.push({ firstTry: firstTry(), statements: [...spied.statements] });
      // The first commit landed but its answer was lost with the connection: the writer cannot know it did.
      if (tries.length === 1) throw new Error('Connection terminated unexpectedly');
      return w;
    });
    await charge.committed;
    expect(tries.map((t) => t.firstTry)).toEqual([true, false]);
    const looksForWritten = (t: { statements: string[] }) => t.statements.some((q) => q.includes('FROM usage_records WHERE transfer_id'));
    expect(tries.map(looksForWritten)).toEqual([true, true]);
    expect(await s.records()).toEqual([{ request_id: 'req-0', charged_nano: '400' }]);
    // Owed on the lease until it ends: the journal moves then, by the record, once.
    expect((await journalSum(getDb(), s.walletId)).chargedNano).toBe(0n);
    await s.ledger.release(s.held[0]!);
    expect((await journalSum(getDb(), s.walletId)).chargedNano).toBe(400n);
    expect(await s.used()).toEqual({ day: '400', month: '400' });
    await expectJournalAddsUp(getDb(), s.walletId);
  });
});
