// The batch's write statement (batch-sql.ts): its parameters are numbered from one column table, so every
// `$n` of the statement has its parameter, and each CTE's JSON rows carry exactly its declared columns, each
// value of its declared type. Checked on the statements real batches send, on both databases.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { type LotRow, lotStateOf, writeMoves } from '../../engine/money/batch-sql.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { Moves } from '../../engine/money/moves.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

/** `db` with the write statements (`WITH new_res AS`) of its transactions and their parameters written down. */
function recordingWrites(db: Db): { db: Db; writes: { sql: string; params: unknown[] }[] } {
  const writes: { sql: string; params: unknown[] }[] = [];
  const spy = new Proxy(db, {
    get(target, prop) {
      if (prop === 'transaction') {
        return (fn: Parameters<Db['transaction']>[0], opts?: { flushWal?: boolean }) =>
          target.transaction(
            (tx) =>
              fn({
                query: (sql, params) => {
                  if (sql.includes('WITH new_res AS (')) writes.push({ sql, params: params ?? [] });
                  return tx.query(sql, params);
                },
                queryAndCommit: (sql, params) => {
                  if (sql.includes('WITH new_res AS (')) writes.push({ sql, params: params ?? [] });
                  return tx.queryAndCommit(sql, params);
                },
              }),
            opts,
          );
      }
      const v = Reflect.get(target, prop);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { db: spy, writes };
}

const FITS: Record<string, (v: unknown) => boolean> = {
  text: (v) => typeof v === 'string',
  bigint: (v) => typeof v === 'string' && /^-?\d+$/.test(v),
  timestamptz: (v) => typeof v === 'string' && !Number.isNaN(Date.parse(v)),
};

/** Checks one write statement against its parameters; returns how many rows each CTE's recordset carried. */
function checkWrite({ sql, params }: { sql: string; params: unknown[] }): number[] {
  const used = new Set<number>();
  for (const [, n] of sql.matchAll(/\$(\d+)/g)) {
    used.add(Number(n));
    expect(Number(n), `$${n}`).toBeLessThanOrEqual(params.length);
  }
  expect([...used].sort((a, b) => a - b)).toEqual(params.map((_, i) => i + 1));
  expect(typeof params[0], '$1, the owner').toBe('string');
  const counts: number[] = [];
  for (const [, n, columns] of sql.matchAll(/json_to_recordset\(\$(\d+)::json\) AS \w+\(([^)]*)\)/g)) {
    const declared = columns!.split(',').map((c) => c.trim().split(/\s+/) as [string, string]);
    const rows = JSON.parse(params[Number(n) - 1] as string) as Record<string, unknown>[];
    for (const row of rows) {
      expect(Object.keys(row), `$${n}'s columns`).toEqual(declared.map(([name]) => name));
      for (const [name, type] of declared) {
        expect(FITS[type], `${name} ${type}`).toBeDefined();
        if (row[name] !== null) expect(FITS[type]!(row[name]), `$${n}: ${name} ${type} holds ${String(row[name])}`).toBe(true);
      }
    }
    counts.push(rows.length);
  }
  expect(counts).toHaveLength(7);
  const expectedAt = Number(/ledger_check\(rows = \$(\d+)::int\[\]/.exec(sql)?.[1]);
  expect(params[expectedAt - 1], 'the rows it must write').toEqual(counts);
  return counts;
}

describeEachDatabase('the batch write statement', (getDb: () => Db) => {
  const clock = fixedClock('2026-05-01T00:00:00Z');

  it('every $n has a parameter, every JSON row its declared columns and types, and the batch writes', async () => {
    const { db, writes } = recordingWrites(getDb());
    const l = createLedger(db, { clock, owner: 'batch-sql-test' });
    const w = await l.createWallet({ credits: 10 });
    const [a, b] = await Promise.all([
      l.reserve({ walletId: w.id, vendor: 'b', amountNano: 4000n, callId: 'a' }),
      l.reserve({ walletId: w.id, vendor: 'b', amountNano: 1000n, callId: 'b' }),
    ]);
    if (!a.ok || !b.ok) throw new Error('refused');
    expect((await l.draw(a.reservation, 300n, 'draw-1')).chargedNano).toBe(300n);
    await Promise.all([l.settle(b.reservation, 700n), l.release(a.reservation)]);
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 9000n, reservedNano: 0n });
    await expectJournalAddsUp(getDb(), w.id);

    expect(writes.length).toBeGreaterThanOrEqual(3);
    const carried = writes.map(checkWrite);
    // Every CTE carried rows in some batch: reserves (new_res, new_res_lots, lots, journal), the draw
    // (finished, held_moved, draws).
    for (let cte = 0; cte < 7; cte++)
      expect(
        carried.some((c) => c[cte]! > 0),
        `CTE ${cte}`,
      ).toBe(true);
  });
});

describeEachDatabase("the batch write statement's own check", (getDb: () => Db) => {
  const clock = fixedClock('2026-05-01T00:00:00Z');

  it('fails, sent with its COMMIT, and commits nothing when it wrote fewer rows than its moves', async () => {
    const db = getDb();
    const l = createLedger(db, { clock, owner: 'batch-sql-test' });
    const w = await l.createWallet({ credits: 10 });
    const lot = (
      await db.query<LotRow>(
        'SELECT id, wallet_id, seq::text AS seq, vendors, available_nano, reserved_nano, expires_at FROM credit_lots WHERE wallet_id = $1',
        [w.id],
      )
    ).rows[0]!;
    const before = await l.balance(w.id);
    const moves = new Moves();
    moves.move(lotStateOf(lot), null, 'expire', 1_000n, clock.now()); // a lot row and a journal row, both real
    moves.finished.set('no-such-reservation', { state: 'released', charged: 0n, at: clock.now() }); // no row to update
    await expect(db.transaction((tx) => writeMoves(tx, 'batch-sql-test', moves, { last: true }))).rejects.toThrow(
      'ledger: a batch wrote {0,0,1,1,0,0,0} rows of new_res, new_res_lots, lots, journal, finished, held_moved, draws, expected {0,0,1,1,1,0,0}',
    );
    expect(await l.balance(w.id)).toEqual(before);
    await expectJournalAddsUp(getDb(), w.id);
  });
});
