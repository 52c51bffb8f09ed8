// The SQL of a ledger batch: lock the rows in a fixed order, then write what policy.ts decided in one statement with
// parameters only, so no mover reads a stale balance (docs/decisions/ledger-exactness.md).
import { toBigInt } from '../core/money.ts';
import type { Statement } from '../db/charge-rows.ts';
import type { Queryable, Transaction } from '../db/db.ts';
import type { Expected } from './known-rows.ts';
import type { Moves } from './moves.ts';
import type { LotState, ReservationState, ResState, WalletFacts } from './policy.ts';

// Every batch's lock order: live lots in `seq` order, then reservations in id order (the materialized CTEs make
// the UNION ALL lock all lots first). Only locked rows come back current, so holds are read by the next statement
// (holdsAndDrawsSql), sent with this one.
const LOCK_SQL = `
WITH lots AS MATERIALIZED (
  SELECT l.id, l.wallet_id, l.seq, l.vendors, l.available_nano, l.reserved_nano, l.expires_at
    FROM credit_lots l
   WHERE l.wallet_id = ANY($1::text[]) AND (l.available_nano > 0 OR l.reserved_nano > 0)
   ORDER BY l.seq
     FOR UPDATE
), res AS MATERIALIZED (
  SELECT r.id, r.wallet_id, r.key_id, r.vendor, r.amount_nano, r.state, r.charged_nano, r.expires_at
    FROM reservations r
   WHERE r.id = ANY($2::text[])
   ORDER BY r.id
     FOR UPDATE
)
SELECT 'lot' AS row_kind, id, wallet_id, seq::text AS seq, vendors, available_nano, reserved_nano,
       NULL::text AS key_id, NULL::text AS vendor, NULL::bigint AS amount_nano, NULL::text AS state, NULL::bigint AS charged_nano,
       expires_at
  FROM lots
UNION ALL
SELECT 'reservation', id, wallet_id, NULL, NULL, NULL, NULL, key_id, vendor, amount_nano, state, charged_nano, expires_at
  FROM res`;

// Issued after LOCK_SQL: the locked reservations' holds and, on a retry, which of the batch's draws ($2) were written
// before, as a draw row or a `recorded` charge row carrying the draw's id (written since $3).
const HOLDS_SQL = `SELECT 'hold' AS row_kind, reservation_id, lot_id, amount_nano::text AS amount_nano
  FROM reservation_lots WHERE reservation_id = ANY($1::text[])`;
const holdsAndDrawsSql = (recorded: readonly ((ids: string, since: string) => string)[]) => `${HOLDS_SQL}
UNION ALL
SELECT 'drawn', draw_id, NULL, NULL FROM reservation_draws WHERE draw_id = ANY($2::text[])${recorded
  .map((q) => `\nUNION ALL\nSELECT 'drawn', r.transfer_id, NULL, NULL FROM (${q('$2', '$3')}) r`)
  .join('')}`;

function holdsRead(reservationIds: string[], drawIds: readonly string[], recorded: RecordedDraws): [string, unknown[]] {
  if (drawIds.length === 0) return [HOLDS_SQL, [reservationIds]];
  if (recorded.queries.length === 0) return [holdsAndDrawsSql([]), [reservationIds, drawIds]];
  return [holdsAndDrawsSql(recorded.queries), [reservationIds, drawIds, recorded.since.toISOString()]];
}

/** Charge rows that record a draw's id, and the earliest instant one of this batch's can have been written. */
export type RecordedDraws = { queries: readonly ((ids: string, since: string) => string)[]; since: Date };

interface LockRow {
  row_kind: 'lot' | 'reservation';
  id: string;
  wallet_id: string;
  seq: string | null;
  vendors: string[] | null;
  available_nano: string | null;
  reserved_nano: string | null;
  key_id: string | null;
  vendor: string | null;
  amount_nano: string | null;
  state: string | null;
  charged_nano: string | null;
  expires_at: string | Date | null;
}

export type LotRow = Pick<LockRow, 'id' | 'wallet_id' | 'seq' | 'vendors' | 'available_nano' | 'reserved_nano' | 'expires_at'>;

/** A locked `credit_lots` row as the Book decides on it (the batches' lock, and the expiry pass's). */
export const lotStateOf = (row: LotRow): LotState => ({
  id: row.id,
  walletId: row.wallet_id,
  seq: toBigInt(row.seq),
  vendors: row.vendors ?? null,
  avail: toBigInt(row.available_nano),
  reserved: toBigInt(row.reserved_nano),
  expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
});

/** Locks the batch's lots and reservations, then reads their holds and which `drawIds` were written. */
export async function lockBatch(
  tx: Queryable,
  walletIds: readonly string[],
  reservationIds: readonly string[],
  drawIds: readonly string[],
  recorded: RecordedDraws,
): Promise<{ lots: LotState[]; reservations: Map<string, ResState>; drawnBefore: Set<string> }> {
  // Sent together, run in order: the holds read starts once the locks are taken, so it sees them current.
  const locking = tx.query<LockRow>(LOCK_SQL, [walletIds, reservationIds]);
  const reading =
    reservationIds.length > 0
      ? tx.query<{ row_kind: 'hold' | 'drawn'; reservation_id: string; lot_id: string; amount_nano: string }>(
          ...holdsRead([...reservationIds], drawIds, recorded),
        )
      : null;
  reading?.catch(() => {}); // when the lock fails, this fails behind it; the lock's error is the one thrown
  const rows = (await locking).rows;
  const lots: LotState[] = [];
  const reservations = new Map<string, ResState>();
  for (const row of rows) {
    if (row.row_kind === 'lot') {
      lots.push(lotStateOf(row));
      continue;
    }
    reservations.set(row.id, {
      id: row.id,
      walletId: row.wallet_id,
      keyId: row.key_id,
      vendor: row.vendor!,
      amount: toBigInt(row.amount_nano),
      state: row.state as ReservationState,
      charged: row.charged_nano === null ? 0n : toBigInt(row.charged_nano),
      expiresAt: new Date(row.expires_at!),
      held: new Map(),
    });
  }
  const drawnBefore = new Set<string>();
  for (const h of reading ? (await reading).rows : []) {
    if (h.row_kind === 'drawn') drawnBefore.add(h.reservation_id);
    else reservations.get(h.reservation_id)?.held.set(h.lot_id, toBigInt(h.amount_nano));
  }
  return { lots, reservations, drawnBefore };
}

// A batch decided on the rows as this process last wrote them (known-rows.ts): locks them in LOCK_SQL's order and
// fails with GWSTL unless each is as the decisions assumed. Both sides are sorted here, in one collation. The holds
// are read, not locked: a writer that changes a reservation's holds changes its locked row too (its amount), so
// only a change committed before this statement began can differ there, and this statement's snapshot has it.
const EXPECT_SQL = `
WITH lots AS MATERIALIZED (
  SELECT l.id || ':' || l.available_nano || ':' || l.reserved_nano || ':' ||
         coalesce(to_char(l.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), '') || ':' ||
         coalesce(array_to_string(l.vendors, ','), '*') AS row
    FROM credit_lots l
   WHERE l.wallet_id = ANY($1::text[]) AND (l.available_nano > 0 OR l.reserved_nano > 0)
   ORDER BY l.seq
     FOR UPDATE
), res AS MATERIALIZED (
  SELECT r.id || ':' || r.state || ':' || r.amount_nano || ':' || coalesce(r.charged_nano, 0) || ':' || r.wallet_id || ':' || r.vendor AS row
    FROM reservations r
   WHERE r.id = ANY($2::text[])
   ORDER BY r.id
     FOR UPDATE
), held AS (
  SELECT h.reservation_id || ':' || h.lot_id || ':' || h.amount_nano AS row
    FROM reservation_lots h
   WHERE h.reservation_id = ANY($2::text[]) AND h.amount_nano > 0
)
SELECT ledger_expect(
  (SELECT coalesce(array_agg(row ORDER BY row), '{}') FROM lots) = (SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM unnest($3::text[]) x)
  AND (SELECT coalesce(array_agg(row ORDER BY row), '{}') FROM res) = (SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM unnest($4::text[]) x)
  AND (SELECT coalesce(array_agg(row ORDER BY row), '{}') FROM held) = (SELECT coalesce(array_agg(x ORDER BY x), '{}') FROM unnest($5::text[]) x))`;

/** Sends the check of a batch decided from memory; the batch's write is sent behind it, in the same flight. */
export function expectRows(tx: Queryable, expected: Expected): Promise<unknown> {
  return tx.query(EXPECT_SQL, [expected.walletIds, expected.reservationIds, expected.lots, expected.reservations, expected.holds]);
}

/** The check found rows another writer changed: nothing was written, and the batch runs again reading them. */
export const isStale = (e: unknown): boolean => (e as { code?: unknown } | null)?.code === 'GWSTL';

// For refusals only, read without locks: does the wallet exist, has it any lot, any that could ever serve the vendor.
const WALLET_INFO_SQL = `
SELECT u.wallet_id, u.vendor,
       EXISTS (SELECT 1 FROM wallets w WHERE w.id = u.wallet_id) AS wallet,
       EXISTS (SELECT 1 FROM credit_lots l WHERE l.wallet_id = u.wallet_id) AS any_lot,
       EXISTS (SELECT 1 FROM credit_lots l WHERE l.wallet_id = u.wallet_id AND (l.vendors IS NULL OR u.vendor = ANY(l.vendors))) AS usable_lot
  FROM unnest($1::text[], $2::text[]) AS u(wallet_id, vendor)`;

const factsKey = (walletId: string, vendor: string) => `${walletId}\u0000${vendor}`;

/** The wallet facts of each (wallet, vendor) pair, read once for the whole batch; `get` answers per pair. */
export async function readWalletFacts(
  tx: Queryable,
  pairs: readonly { walletId: string; vendor: string }[],
): Promise<{ get(walletId: string, vendor: string): WalletFacts | undefined }> {
  const unique = [...new Map(pairs.map((p) => [factsKey(p.walletId, p.vendor), p])).values()];
  const rows = (
    await tx.query<{ wallet_id: string; vendor: string; wallet: boolean; any_lot: boolean; usable_lot: boolean }>(WALLET_INFO_SQL, [
      unique.map((p) => p.walletId),
      unique.map((p) => p.vendor),
    ])
  ).rows;
  const facts = new Map(
    rows.map((r) => [factsKey(r.wallet_id, r.vendor), { exists: r.wallet, anyLot: r.any_lot, usableLot: r.usable_lot }]),
  );
  return { get: (walletId, vendor) => facts.get(factsKey(walletId, vendor)) };
}

// WRITE_SQL's parameters, from one table: $1 is the owner of new reservations, then each CTE's columns in order,
// one array each; the SQL's numbers and the parameter list are both made from it, so they cannot disagree.
type ArrayType = 'text[]' | 'bigint[]' | 'timestamptz[]';
interface Column<R> {
  name: string;
  type: ArrayType;
  value: (row: R) => string | null;
}
const columns = <R>(...cols: [name: string, type: ArrayType, value: (row: R) => string | null][]): Column<R>[] =>
  cols.map(([name, type, value]) => ({ name, type, value }));

type Delta = [id: string, d: { avail: bigint; reserved: bigint }];
type Finished = [id: string, f: { state: string; charged: bigint; at: Date | null; amount?: bigint | undefined }];
type HeldRow = { reservationId: string; lotId: string; amount: bigint };
const s = (n: bigint) => n.toString();

const WRITE_COLUMNS = {
  newRes: columns<Moves['newRes'][number]>(
    ['id', 'text[]', (o) => o.id],
    ['wallet_id', 'text[]', (o) => o.walletId],
    ['call_id', 'text[]', (o) => o.callId],
    ['key_id', 'text[]', (o) => o.keyId],
    ['vendor', 'text[]', (o) => o.vendor],
    ['amount', 'bigint[]', (o) => s(o.amountNano)],
    ['created_at', 'timestamptz[]', (o) => o.createdAt.toISOString()],
    ['expires_at', 'timestamptz[]', (o) => o.expiresAt.toISOString()],
  ),
  newResLots: columns<Moves['newResLots'][number]>(
    ['reservation_id', 'text[]', (x) => x.reservationId],
    ['lot_id', 'text[]', (x) => x.lotId],
    ['amount', 'bigint[]', (x) => s(x.amount)],
  ),
  lots: columns<Delta>(
    ['id', 'text[]', ([id]) => id],
    ['avail', 'bigint[]', ([, d]) => s(d.avail)],
    ['reserved', 'bigint[]', ([, d]) => s(d.reserved)],
  ),
  journal: columns<Moves['journal'][number]>(
    ['wallet_id', 'text[]', (j) => j.walletId],
    ['lot_id', 'text[]', (j) => j.lotId],
    ['reservation_id', 'text[]', (j) => j.reservationId],
    ['kind', 'text[]', (j) => j.kind],
    ['amount', 'bigint[]', (j) => s(j.amount)],
    ['at', 'timestamptz[]', (j) => j.at.toISOString()],
  ),
  finished: columns<Finished>(
    ['id', 'text[]', ([id]) => id],
    ['state', 'text[]', ([, f]) => f.state],
    ['charged', 'bigint[]', ([, f]) => s(f.charged)],
    ['at', 'timestamptz[]', ([, f]) => (f.at ? f.at.toISOString() : null)],
    ['amount', 'bigint[]', ([, f]) => (f.amount === undefined ? null : s(f.amount))],
  ),
  held: columns<HeldRow>(
    ['reservation_id', 'text[]', (h) => h.reservationId],
    ['lot_id', 'text[]', (h) => h.lotId],
    ['amount', 'bigint[]', (h) => s(h.amount)],
  ),
  draws: columns<Moves['draws'][number]>(
    ['draw_id', 'text[]', (d) => d.drawId],
    ['reservation_id', 'text[]', (d) => d.reservationId],
    ['amount', 'bigint[]', (d) => s(d.amount)],
    ['at', 'timestamptz[]', (d) => d.at.toISOString()],
  ),
};
type WriteRows = { [K in keyof typeof WRITE_COLUMNS]: readonly ((typeof WRITE_COLUMNS)[K] extends Column<infer R>[] ? R : never)[] };

/** Each CTE's `$n::type` list and alias column names, numbered from $2 in WRITE_COLUMNS order. */
const U = (() => {
  let n = 1;
  const out = {} as Record<keyof typeof WRITE_COLUMNS, { params: string; names: string }>;
  for (const [cte, cols] of Object.entries(WRITE_COLUMNS) as [keyof typeof WRITE_COLUMNS, Column<never>[]][]) {
    out[cte] = { params: cols.map((c) => `$${++n}::${c.type}`).join(', '), names: cols.map((c) => c.name).join(', ') };
  }
  return out;
})();

function writeParams(owner: string, rows: WriteRows): unknown[] {
  const params: unknown[] = [owner];
  for (const [cte, cols] of Object.entries(WRITE_COLUMNS) as [keyof WriteRows, Column<unknown>[]][]) {
    for (const c of cols) params.push(rows[cte].map(c.value));
  }
  return params;
}

/** The write's rows per kind, in the order its check lists them. */
const WRITTEN = ['new_res', 'new_res_lots', 'lots', 'journal', 'finished', 'held_moved', 'draws'] as const;
/** How many parameters WRITE_SQL takes: the owner, one array per column, and the rows it must write per kind. */
const WRITE_PARAMS = 2 + Object.values(WRITE_COLUMNS).reduce((n, cols) => n + cols.length, 0);

const WRITE_SQL = `
WITH new_res AS (
  INSERT INTO reservations (id, wallet_id, owner, call_id, key_id, vendor, amount_nano, state, created_at, expires_at)
  SELECT u.id, u.wallet_id, $1, u.call_id, u.key_id, u.vendor, u.amount, 'held', u.created_at, u.expires_at
    FROM unnest(${U.newRes.params})
      AS u(${U.newRes.names})
  RETURNING id
), new_res_lots AS (
  INSERT INTO reservation_lots (reservation_id, lot_id, amount_nano)
  SELECT u.reservation_id, u.lot_id, u.amount
    FROM unnest(${U.newResLots.params}) AS u(${U.newResLots.names})
  RETURNING reservation_id
), lots AS (
  UPDATE credit_lots l
     SET available_nano = l.available_nano + d.avail, reserved_nano = l.reserved_nano + d.reserved
    FROM unnest(${U.lots.params}) AS d(${U.lots.names})
   WHERE l.id = d.id
  RETURNING l.id
), journal AS (
  INSERT INTO ledger_journal (wallet_id, lot_id, reservation_id, kind, amount_nano, at)
  SELECT u.wallet_id, u.lot_id, u.reservation_id, u.kind, u.amount, u.at
    FROM unnest(${U.journal.params})
      AS u(${U.journal.names})
  RETURNING id
), finished AS (
  UPDATE reservations r
     SET state = d.state, charged_nano = d.charged, finished_at = coalesce(d.at, r.finished_at),
         amount_nano = coalesce(d.amount, r.amount_nano)
    FROM unnest(${U.finished.params}) AS d(${U.finished.names})
   WHERE r.id = d.id
  RETURNING r.id
), held_moved AS (
  UPDATE reservation_lots rl
     SET amount_nano = rl.amount_nano - d.amount
    FROM unnest(${U.held.params}) AS d(${U.held.names})
   WHERE rl.reservation_id = d.reservation_id AND rl.lot_id = d.lot_id
  RETURNING rl.reservation_id
), draws AS (
  INSERT INTO reservation_draws (draw_id, reservation_id, amount_nano, at)
  SELECT u.draw_id, u.reservation_id, u.amount, u.at
    FROM unnest(${U.draws.params}) AS u(${U.draws.names})
  RETURNING draw_id
), written AS (
  SELECT ARRAY[(SELECT count(*) FROM new_res), (SELECT count(*) FROM new_res_lots), (SELECT count(*) FROM lots),
               (SELECT count(*) FROM journal), (SELECT count(*) FROM finished), (SELECT count(*) FROM held_moved),
               (SELECT count(*) FROM draws)]::int[] AS rows
)
SELECT ledger_check(rows = $${WRITE_PARAMS}::int[],
                    'a batch wrote ' || rows::text || ' rows of ${WRITTEN.join(', ')}, expected ' || $${WRITE_PARAMS}::int[]::text)
  FROM written`;

/** `WRITE_SQL` with the charge rows' statements as CTEs of its own, their parameters renumbered after its own. */
function withChargeRows(chargeRows: readonly Statement[]): { sql: string; params: unknown[] } {
  if (chargeRows.length === 0) return { sql: WRITE_SQL, params: [] };
  let next = WRITE_PARAMS;
  const params: unknown[] = [];
  const ctes = chargeRows.map((b, i) => {
    const offset = next;
    next += b.params.length;
    params.push(...b.params);
    return `charge_rows_${i} AS (${b.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
  });
  return { sql: WRITE_SQL.replace('WITH new_res AS (', `WITH ${ctes.join(',\n')},\nnew_res AS (`), params };
}

/**
 * Writes a batch's moves and its charge rows in one statement, which fails unless it wrote a row per move (the rows
 * are ours, locked, so a count that differs is a bug). `last`: the transaction's last statement, sent with its COMMIT.
 */
export async function writeMoves(
  tx: Transaction,
  owner: string,
  moves: Moves,
  opts: { chargeRows?: readonly Statement[]; recordedDraws?: ReadonlySet<string>; last?: boolean } = {},
): Promise<void> {
  // A draw whose usage record carries its id is recognised by that record: no draw row of its own.
  const draws = moves.draws.filter((d) => !opts.recordedDraws?.has(d.drawId));
  const lots = [...moves.lotDelta].filter(([, d]) => d.avail !== 0n || d.reserved !== 0n);
  const fin = [...moves.finished];
  // Several draws of one batch may take from the same hold: summed, as an UPDATE … FROM changes a row once.
  const held = new Map<string, { reservationId: string; lotId: string; amount: bigint }>();
  for (const d of moves.heldDelta) {
    const k = `${d.reservationId}\u0000${d.lotId}`;
    const cur = held.get(k);
    if (cur) cur.amount += d.amount;
    else held.set(k, { ...d });
  }
  const rows = {
    newRes: moves.newRes,
    newResLots: moves.newResLots,
    lots,
    journal: moves.journal,
    finished: fin,
    held: [...held.values()],
    draws,
  };
  const expected = [rows.newRes, rows.newResLots, rows.lots, rows.journal, rows.finished, rows.held, rows.draws].map((r) => r.length);
  const write = withChargeRows(opts.chargeRows ?? []);
  const params = [...writeParams(owner, rows), expected, ...write.params];
  await (opts.last ? tx.queryAndCommit(write.sql, params) : tx.query(write.sql, params));
}
