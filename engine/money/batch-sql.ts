// The SQL of a ledger batch: lock the rows in a fixed order, then write what policy.ts decided in one statement with
// parameters only, so no mover reads a stale balance (docs/decisions/ledger-exactness.md).
import { toBigInt } from '../core/money.ts';
import type { Statement } from '../db/charge-rows.ts';
import type { Queryable, Transaction } from '../db/db.ts';
import { jsonTable } from '../db/json-rows.ts';
import { type RecordedDraws, withCtes } from './batch-charge-rows.ts';
import type { Moves } from './moves.ts';
import type { LotState, ReservationState, ResState, WalletFacts } from './policy.ts';

// Every mover's lock order, lots before reservations (docs/decisions/ledger-exactness.md). Only locked rows come back
// current, so the holds are read by the next statement (holdsAndDrawsSql), sent with this one.
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
// before, as a draw row or a `recorded` charge row carrying the draw's id (written from $3 to before $4).
// And what the locked leases owe: the sum of their records (lease-records.ts), which their lots pay when they end.
const HOLDS_SQL = `SELECT 'hold' AS row_kind, reservation_id, lot_id, amount_nano::text AS amount_nano
  FROM reservation_lots WHERE reservation_id = ANY($1::text[])
UNION ALL
SELECT 'owed', lease_id, NULL, sum(charged_nano)::text FROM usage_records WHERE lease_id = ANY($1::text[]) GROUP BY lease_id`;
const holdsAndDrawsSql = (recorded: RecordedDraws['queries']) => `${HOLDS_SQL}
UNION ALL
SELECT 'drawn', draw_id, NULL, NULL FROM reservation_draws WHERE draw_id = ANY($2::text[])${recorded
  .map((q) => `\nUNION ALL\nSELECT 'drawn', r.transfer_id, NULL, NULL FROM (${q('$2', '$3', '$4')}) r`)
  .join('')}`;

type HoldRow = { row_kind: 'hold' | 'owed' | 'drawn'; reservation_id: string; lot_id: string; amount_nano: string };
function holdsRead(reservationIds: readonly string[], drawIds: readonly string[], recorded: RecordedDraws): [string, unknown[]] {
  if (drawIds.length === 0) return [HOLDS_SQL, [reservationIds]];
  if (recorded.queries.length === 0) return [holdsAndDrawsSql([]), [reservationIds, drawIds]];
  return [holdsAndDrawsSql(recorded.queries), [reservationIds, drawIds, recorded.since.toISOString(), recorded.until.toISOString()]];
}

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
  const reading = reservationIds.length > 0 ? tx.query<HoldRow>(...holdsRead(reservationIds, drawIds, recorded)) : null;
  reading?.catch(() => {}); // when the lock fails, this fails behind it; the lock's error is the one thrown
  const rows = (await locking).rows;
  const lots: LotState[] = [];
  const reservations = new Map<string, ResState>();
  for (const row of rows) {
    if (row.row_kind === 'lot') lots.push(lotStateOf(row));
    else
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
        owed: 0n,
      });
  }
  const drawnBefore = new Set<string>();
  for (const h of reading ? (await reading).rows : []) {
    const r = reservations.get(h.reservation_id);
    if (h.row_kind === 'drawn') drawnBefore.add(h.reservation_id);
    else if (h.row_kind === 'owed' && r) r.owed = toBigInt(h.amount_nano);
    else r?.held.set(h.lot_id, toBigInt(h.amount_nano));
  }
  return { lots, reservations, drawnBefore };
}

/** Which of `drawIds` were written before: holdsAndDrawsSql's second half alone, after the locks were taken. */
export async function readDrawn(tx: Queryable, drawIds: readonly string[], recorded: RecordedDraws): Promise<string[]> {
  const rows = await tx.query<HoldRow>(...holdsRead([], drawIds, recorded));
  return rows.rows.flatMap((h) => (h.row_kind === 'drawn' ? [h.reservation_id] : []));
}

const WALLET_VENDOR = jsonTable('wallet_id text, vendor text');

// For refusals only, read without locks: does the wallet exist, has it any lot, any that could ever serve the vendor.
const WALLET_INFO_SQL = `
SELECT u.wallet_id, u.vendor,
       EXISTS (SELECT 1 FROM wallets w WHERE w.id = u.wallet_id) AS wallet,
       EXISTS (SELECT 1 FROM credit_lots l WHERE l.wallet_id = u.wallet_id) AS any_lot,
       EXISTS (SELECT 1 FROM credit_lots l WHERE l.wallet_id = u.wallet_id AND (l.vendors IS NULL OR u.vendor = ANY(l.vendors))) AS usable_lot
  FROM ${WALLET_VENDOR.from('$1', 'u')}`;

type FactsRow = { wallet_id: string; vendor: string; wallet: boolean; any_lot: boolean; usable_lot: boolean };
const factsKey = (walletId: string, vendor: string) => `${walletId}\u0000${vendor}`;

/** The wallet facts of each (wallet, vendor) pair, read once for the whole batch; `get` answers per pair. */
export async function readWalletFacts(
  tx: Queryable,
  pairs: readonly { walletId: string; vendor: string }[],
): Promise<{ get(walletId: string, vendor: string): WalletFacts | undefined }> {
  const unique = [...new Map(pairs.map((p) => [factsKey(p.walletId, p.vendor), p])).values()];
  const { rows } = await tx.query<FactsRow>(WALLET_INFO_SQL, [WALLET_VENDOR.json(unique.map((p) => [p.walletId, p.vendor]))]);
  const facts = new Map(
    rows.map((r) => [factsKey(r.wallet_id, r.vendor), { exists: r.wallet, anyLot: r.any_lot, usableLot: r.usable_lot }]),
  );
  return { get: (walletId, vendor) => facts.get(factsKey(walletId, vendor)) };
}

// WRITE_SQL's parameters, from one table: $1 is the owner of new reservations, then one JSON parameter per CTE with
// its rows (json-rows.ts), then the rows each CTE must write. The `$n`s and the parameter list are both made from the
// table, so they cannot disagree; its keys are the CTEs' names, so the counts' order is the table's too.
type Param = string | bigint | Date | null;
/** A value per column of "name type, name type, …". */
type Values<C extends string> = C extends `${string}, ${infer Rest}` ? [Param, ...Values<Rest>] : [Param];
/** A row's values, then the columns they fill, in that order (as many: the type checks it). */
const table = <R, C extends string>(values: (row: R) => Values<C>, columns: C) => ({ values, rows: jsonTable(columns) });

type Delta = [id: string, d: { avail: bigint; reserved: bigint }];
type Finished = [id: string, f: { state: string; charged: bigint; at: Date | null; amount?: bigint | undefined }];

const WRITE = {
  new_res: table(
    (o: Moves['newRes'][number]) => [o.id, o.walletId, o.callId, o.keyId, o.vendor, o.amountNano, o.createdAt, o.expiresAt],
    'id text, wallet_id text, call_id text, key_id text, vendor text, amount bigint, created_at timestamptz, expires_at timestamptz',
  ),
  new_res_lots: table(
    (x: Moves['newResLots'][number]) => [x.reservationId, x.lotId, x.amount],
    'reservation_id text, lot_id text, amount bigint',
  ),
  lots: table(([id, d]: Delta) => [id, d.avail, d.reserved], 'id text, avail bigint, reserved bigint'),
  journal: table(
    (j: Moves['journal'][number]) => [j.walletId, j.lotId, j.reservationId, j.kind, j.amount, j.at],
    'wallet_id text, lot_id text, reservation_id text, kind text, amount bigint, at timestamptz',
  ),
  finished: table(
    ([id, f]: Finished) => [id, f.state, f.charged, f.at, f.amount ?? null],
    'id text, state text, charged bigint, at timestamptz, amount bigint',
  ),
  held_moved: table(
    (h: Moves['heldDelta'][number]) => [h.reservationId, h.lotId, h.amount],
    'reservation_id text, lot_id text, amount bigint',
  ),
  draws: table(
    (d: Moves['draws'][number]) => [d.drawId, d.reservationId, d.amount, d.at],
    'draw_id text, reservation_id text, amount bigint, at timestamptz',
  ),
};
type Cte = keyof typeof WRITE;
type WriteRows = { [K in Cte]: readonly Parameters<(typeof WRITE)[K]['values']>[0][] };
const CTES = Object.keys(WRITE) as Cte[];

/** Each CTE's rows as a table named `alias`, its parameter numbered from $2 in WRITE's order. */
const from = (cte: Cte, alias: string) => WRITE[cte].rows.from(`$${CTES.indexOf(cte) + 2}`, alias);
/** The parameter of the rows each CTE must write, after the CTEs'; and how many parameters in all. */
const WRITE_PARAMS = CTES.length + 2;

function writeParams(owner: string, rows: WriteRows): unknown[] {
  const params: unknown[] = [owner];
  for (const cte of CTES) params.push(WRITE[cte].rows.json(rows[cte].map(WRITE[cte].values as (row: unknown) => Param[])));
  params.push(CTES.map((cte) => rows[cte].length));
  return params;
}

const WRITE_SQL = `
WITH new_res AS (
  INSERT INTO reservations (id, wallet_id, owner, call_id, key_id, vendor, amount_nano, state, created_at, expires_at)
  SELECT u.id, u.wallet_id, $1, u.call_id, u.key_id, u.vendor, u.amount, 'held', u.created_at, u.expires_at
    FROM ${from('new_res', 'u')}
  RETURNING id
), new_res_lots AS (
  INSERT INTO reservation_lots (reservation_id, lot_id, amount_nano)
  SELECT u.reservation_id, u.lot_id, u.amount
    FROM ${from('new_res_lots', 'u')}
  RETURNING reservation_id
), lots AS (
  UPDATE credit_lots l
     SET available_nano = l.available_nano + d.avail, reserved_nano = l.reserved_nano + d.reserved
    FROM ${from('lots', 'd')}
   WHERE l.id = d.id
  RETURNING l.id
), journal AS (
  INSERT INTO ledger_journal (wallet_id, lot_id, reservation_id, kind, amount_nano, at)
  SELECT u.wallet_id, u.lot_id, u.reservation_id, u.kind, u.amount, u.at
    FROM ${from('journal', 'u')}
  RETURNING id
), finished AS (
  UPDATE reservations r
     SET state = d.state, charged_nano = d.charged, finished_at = coalesce(d.at, r.finished_at),
         amount_nano = coalesce(d.amount, r.amount_nano)
    FROM ${from('finished', 'd')}
   WHERE r.id = d.id
  RETURNING r.id
), held_moved AS (
  UPDATE reservation_lots rl
     SET amount_nano = rl.amount_nano - d.amount
    FROM ${from('held_moved', 'd')}
   WHERE rl.reservation_id = d.reservation_id AND rl.lot_id = d.lot_id
  RETURNING rl.reservation_id
), draws AS (
  INSERT INTO reservation_draws (draw_id, reservation_id, amount_nano, at)
  SELECT u.draw_id, u.reservation_id, u.amount, u.at
    FROM ${from('draws', 'u')}
  RETURNING draw_id
), written AS (
  SELECT ARRAY[${CTES.map((cte) => `(SELECT count(*) FROM ${cte})`).join(', ')}]::int[] AS rows
)
SELECT ledger_check(rows = $${WRITE_PARAMS}::int[],
                    'a batch wrote ' || rows::text || ' rows of ${CTES.join(', ')}, expected ' || $${WRITE_PARAMS}::int[]::text)
  FROM written`;

/** Writes a batch's moves and charge rows in one statement (`ledger_check`: a row per move); `last`: with the COMMIT. */
export async function writeMoves(
  tx: Transaction,
  owner: string,
  moves: Moves,
  opts: { chargeRows?: readonly Statement[]; recordedDraws?: ReadonlySet<string>; last?: boolean } = {},
): Promise<void> {
  // Several draws of one batch may take from the same hold: summed, as an UPDATE … FROM changes a row once.
  const held = new Map<string, Moves['heldDelta'][number]>();
  for (const d of moves.heldDelta) {
    const k = `${d.reservationId}\u0000${d.lotId}`;
    const cur = held.get(k);
    if (cur) cur.amount += d.amount;
    else held.set(k, { ...d });
  }
  const write = withCtes(WRITE_SQL, WRITE_PARAMS, opts.chargeRows ?? []);
  const rows: WriteRows = {
    new_res: moves.newRes,
    new_res_lots: moves.newResLots,
    lots: [...moves.lotDelta].filter(([, d]) => d.avail !== 0n || d.reserved !== 0n),
    journal: moves.journal,
    finished: [...moves.finished],
    held_moved: [...held.values()],
    // A draw whose usage record carries its id is recognised by that record: no draw row of its own.
    draws: moves.draws.filter((d) => !opts.recordedDraws?.has(d.drawId)),
  };
  const params = [...writeParams(owner, rows), ...write.params];
  await (opts.last ? tx.queryAndCommit(write.sql, params) : tx.query(write.sql, params));
}
