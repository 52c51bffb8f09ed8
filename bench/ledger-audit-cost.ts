// What one ledger audit (engine/money/audit.ts) costs on a large ledger: fills a fresh PostgreSQL schema (or an
// in-memory PGlite) with a ledger that adds up (wallets of two lots, each lot topped up once then reserved,
// settled and released over and over, the journal rows interleaved as traffic would write them, plus held
// reservations), then times the audit's three statements, three times over.
//
//   node --import tsx bench/ledger-audit-cost.ts [--rows 5000000] [--db postgres|pglite] [--explain]
//
// PostgreSQL is TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test); the schema is dropped after.
// --explain prints each statement's plan as it ran (EXPLAIN ANALYZE) after the timed audits.
import { parseArgs } from 'node:util';
import type { Db, Queryable } from '../engine/db/db.ts';
import { migrate } from '../engine/db/migrate.ts';
import { openPglite } from '../engine/db/pglite.ts';
import { openScratchSchema } from '../engine/db/scratch-schema.ts';
import { checkLedger } from '../engine/money/audit.ts';

const { values } = parseArgs({
  options: { rows: { type: 'string' }, db: { type: 'string', default: 'postgres' }, explain: { type: 'boolean', default: false } },
});
const kind = values.db === 'pglite' ? 'pglite' : 'postgres';
const rows = Number(values.rows ?? (kind === 'pglite' ? 1_000_000 : 5_000_000));

const ROWS_PER_LOT = 250; // a top-up and 83 calls of three rows each
const CYCLES = Math.floor((ROWS_PER_LOT - 1) / 3);
const lots = Math.max(2, Math.round(rows / ROWS_PER_LOT / 2) * 2);
const wallets = lots / 2;
const held = Math.min(1_000, lots);
const GRANT = 1_000_000_000_000n;

async function fill(db: Db): Promise<void> {
  const left = (GRANT - BigInt(CYCLES) * 400n).toString();
  await db.query(`INSERT INTO wallets (id, owner_id) SELECT 'w' || i, 'o' || i FROM generate_series(1, $1::int) i`, [wallets]);
  await db.query(
    `INSERT INTO credit_lots (id, wallet_id, granted_nano, available_nano) SELECT 'l' || i, 'w' || ((i + 1) / 2), $2::bigint, $3::bigint FROM generate_series(1, $1::int) i`,
    [lots, GRANT.toString(), left],
  );
  await db.query(
    `INSERT INTO ledger_journal (wallet_id, lot_id, kind, amount_nano) SELECT 'w' || ((i + 1) / 2), 'l' || i, 'top_up', $2::bigint FROM generate_series(1, $1::int) i`,
    [lots, GRANT.toString()],
  );
  // One call after another on every lot: reserve 1,000, settle 400, release 600.
  await db.query(
    `INSERT INTO ledger_journal (wallet_id, lot_id, kind, amount_nano)
     SELECT 'w' || ((i + 1) / 2), 'l' || i, k.kind, k.amount
       FROM generate_series(1, $1::int) c, generate_series(1, $2::int) i, (VALUES (1, 'reserve', 1000), (2, 'settle', 400), (3, 'release', 600)) k(n, kind, amount)
      ORDER BY c, i, k.n`,
    [CYCLES, lots],
  );
  // Calls in flight: a held reservation of 1,000 on each of the first lots.
  await db.query(
    `INSERT INTO reservations (id, wallet_id, owner, call_id, vendor, amount_nano, expires_at)
     SELECT 'r' || i, 'w' || ((i + 1) / 2), 'bench', 'c' || i, 'b', 1000, now() + interval '15 minutes' FROM generate_series(1, $1::int) i`,
    [held],
  );
  await db.query(
    `INSERT INTO reservation_lots (reservation_id, lot_id, amount_nano) SELECT 'r' || i, 'l' || i, 1000 FROM generate_series(1, $1::int) i`,
    [held],
  );
  await db.query(
    `INSERT INTO ledger_journal (wallet_id, lot_id, reservation_id, kind, amount_nano) SELECT 'w' || ((i + 1) / 2), 'l' || i, 'r' || i, 'reserve', 1000 FROM generate_series(1, $1::int) i`,
    [held],
  );
  await db.query(`UPDATE credit_lots SET available_nano = available_nano - 1000, reserved_nano = 1000 WHERE seq <= $1`, [held]);
  await db.query('VACUUM ANALYZE');
}

/** The Db with each statement's time noted, in order. */
function timed(db: Queryable, took: number[]): Queryable {
  return {
    async query(sql, params) {
      const t0 = performance.now();
      try {
        return await db.query(sql, params);
      } finally {
        took.push(performance.now() - t0);
      }
    },
  } as Queryable;
}

const scratch =
  kind === 'postgres' ? await openScratchSchema(process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test') : null;
const db: Db = scratch?.db ?? (await openPglite());
try {
  if (!scratch) await migrate(db);
  const t0 = performance.now();
  await fill(db);
  const count = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM ledger_journal');
  const size =
    kind === 'postgres'
      ? (await db.query<{ s: string }>(`SELECT pg_size_pretty(pg_total_relation_size('ledger_journal')) AS s`)).rows[0]!.s
      : 'n/a';
  console.log(
    `${kind}: ${count.rows[0]!.n} journal rows (${size}), ${wallets} wallets, ${lots} lots, ${held} held; filled in ${Math.round(performance.now() - t0)} ms`,
  );
  for (let i = 1; i <= 3; i++) {
    const took: number[] = [];
    const t = performance.now();
    const audit = await checkLedger(timed(db, took), { heldExpiredBefore: new Date(Date.now() - 180_000) });
    const ms = (n: number) => `${Math.round(n)} ms`;
    console.log(
      `audit ${i}: ${ms(performance.now() - t)} (journal ${ms(took[0]!)}, balances ${ms(took[1]!)}, holds ${ms(took[2]!)}); ok ${audit.ok}`,
    );
  }
  if (values.explain) {
    const explained: Queryable = {
      async query(sql, params) {
        const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
        console.log(plan.rows.map((r) => r['QUERY PLAN']).join('\n'), '\n');
        return { rows: [], rowCount: 0 };
      },
    } as Queryable;
    await checkLedger(explained, { heldExpiredBefore: new Date(Date.now() - 180_000) });
  }
} finally {
  if (scratch) await scratch.cleanup();
  else await db.close();
}
