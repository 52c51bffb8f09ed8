// One run of a batch, in its transaction, with the exactness rules of ledger.ts (the SQL is batch-sql.ts's, the
// decisions policy.ts's):
//   1. lock, in one statement: the live lots of the batch's wallets in `seq` order, then the reservations its
//      finishes name, in id order (`FOR UPDATE`); then, in a second statement, what those reservations hold per
//      lot (a joined row is not re-read after a lock wait: batch-sql.ts says why). A reservation of a wallet
//      whose lots were not locked (a wrong wallet id) makes the batch run again with them (`lock-more-wallets`);
//   1b. the keys whose cap a reserve carries, locked in key id order (their api_keys rows), then in one statement
//      each key's use of the month (its usage_daily rows) and what its held reservations hold. A capped reserve
//      commits its hold before the key's lock is let go;
//   2. decide the ops one after another, in queue order, in memory (a policy.ts Book): exactly the decisions
//      one op per transaction would make. Refusals read the wallet facts once per batch;
//   3. write every move with one statement of writable CTEs over parameter arrays, the charge rows riding in
//      it (batch-charge-rows.ts); 4. the charge callbacks, in op order. The caller commits.
// A run ends in a verdict (batch-verdict.ts), never a thrown one; only real failures (deadlocks, lost
// connections, bugs) throw.
import type { Clock } from '../core/clock.ts';
import { isGatewayError } from '../core/errors.ts';
import type { Queryable } from '../db/db.ts';
import { lockKeys, readKeyStandings } from '../keys/index.ts';
import {
  type DueChargeRows,
  groupedStatements,
  recordedTransferQueries,
  rowsRecordTransfer,
  writeUngroupedChargeRows,
} from './batch-charge-rows.ts';
import type { Op, Pending } from './batch-queues.ts';
import { lockBatch, type RecordedDraws, readWalletFacts, writeMoves } from './batch-sql.ts';
import type { Outcome, Verdict } from './batch-verdict.ts';
import { linkGroupCaps } from './group-caps.ts';
import { Book, type KeyStanding, walletsMissingLocks } from './policy.ts';
import { isLockTimeout } from './retry.ts';
import type { FinishOp, KeyCap, Reservation, ReservationLot, ReserveOp } from './types.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * A decision found the ledger's rows inconsistent (`cause`: a lot would go negative, a hold on a lot that is
 * not live…): the op `opId` (its reservation's id; a reserve's new one) of wallet `walletId` failed, alone.
 * A bug or a corrupted row, never the caller's doing: log it at error level.
 */
export class LedgerInvariantBroken extends Error {
  constructor(
    readonly kind: Op['kind'],
    readonly opId: string,
    readonly walletId: string | null,
    override readonly cause: unknown,
  ) {
    super(
      `ledger: ${kind} ${opId} of wallet ${walletId ?? '?'} failed on a broken invariant: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
    this.name = 'LedgerInvariantBroken';
  }
}

/** What a run needs besides its transaction and its ops. */
export interface RunContext {
  clock: Clock;
  /** Owner written on new reservations. */
  owner: string;
  /** The plan-restricted vendors (not_in_plan), read when a run decides a refusal. */
  planVendors: () => readonly string[];
}

/** How the batch runs again after a verdict: more wallets locked, or each charge's rows written on their own. */
interface RunShape {
  extraWallets: ReadonlySet<string>;
  separately: boolean;
}

/** Charges decided, waiting for their rows to be written. */
type Due = DueChargeRows<Pending>[];

/** A reserve that needs the wallet facts (a refusal, or nothing to draw from) before it is final. */
interface Undecided {
  index: number;
  op: ReserveOp;
  usableNano: bigint;
}

/** One run of a batch in transaction `tx`: its verdict. Throws only on a real failure (a deadlock, a bug…). */
export async function processBatch(ctx: RunContext, tx: Queryable, batch: Pending[], shape: RunShape): Promise<Verdict> {
  const locked = await lockForBatch(ctx, tx, batch, shape.extraWallets);
  if ('kind' in locked) return locked;
  const book = new Book(locked.lots, locked.reservations, await lockKeyCaps(tx, batch), ctx.clock.now());
  for (const id of locked.drawnBefore) book.drawnBefore.add(id);
  const decided = decideOps(ctx, book, batch);
  if ('kind' in decided) return decided;
  if (decided.undecided.length > 0) {
    const broken = await decideRefusals(ctx, tx, book, batch, decided.undecided, decided.outcomes);
    if (broken) return broken;
  }
  return writeDecided(ctx, tx, book, decided.due, shape.separately, decided.outcomes);
}

/** Step 1: the batch's wallets' live lots and the reservations it finishes, locked; or the wallets still to lock. */
async function lockForBatch(ctx: RunContext, tx: Queryable, batch: Pending[], extraWallets: ReadonlySet<string>) {
  const walletIds = new Set<string>(extraWallets);
  const unknown: string[] = [];
  for (const p of batch) {
    if (p.op.walletId !== null) walletIds.add(p.op.walletId);
    else unknown.push(p.op.id);
  }
  if (unknown.length > 0) {
    // Finishes called with a bare reservation id: a reservation's wallet never changes, so a plain read is
    // enough; the lock below checks the rows.
    const found = await tx.query<{ wallet_id: string }>('SELECT DISTINCT wallet_id FROM reservations WHERE id = ANY($1::text[])', [
      unknown,
    ]);
    for (const r of found.rows) walletIds.add(r.wallet_id);
  }
  const finishes = batch.flatMap((p) => (p.op.kind === 'reserve' ? [] : [p.op]));
  // Draws already written (a retry after an unclear commit) are read with the holds, and not made again.
  const draws = finishes.filter((op) => op.kind === 'draw' && op.drawId);
  const locked = await lockBatch(
    tx,
    [...walletIds],
    [...new Set(finishes.map((op) => op.id))],
    draws.map((op) => op.drawId!),
    recordedDrawsOf(ctx.clock, draws),
  );
  const missing = walletsMissingLocks(finishes, locked.reservations, walletIds);
  if (missing.length > 0) return { kind: 'lock-more-wallets', walletIds: missing } satisfies Verdict;
  return locked;
}

/**
 * How the batch's draws already written are found besides their draw rows: the queries of the charge rows that
 * record a draw's id, since a day before the earliest draw (a record's instant is its call's end, decided before
 * its first write; a charge is not retried for a day).
 */
function recordedDrawsOf(clock: Clock, draws: readonly FinishOp[]): RecordedDraws {
  const earliest = draws.reduce((t, op) => Math.min(t, (op.drawnAt ?? clock.now()).getTime()), clock.now().getTime());
  return { queries: recordedTransferQueries(draws), since: new Date(earliest - DAY_MS) };
}

/**
 * Step 1b: locks every key whose cap a reserve of the batch carries (key id order, the first reserve's cap standing
 * for the key), then reads in one statement each key's finished use of its cap's month and what its held
 * reservations hold; then its group's (group-caps.ts).
 */
async function lockKeyCaps(tx: Queryable, batch: Pending[]): Promise<Map<string, KeyStanding>> {
  const caps = new Map<string, KeyCap>();
  for (const { op } of batch) if (op.kind === 'reserve' && op.cap && op.keyId !== null && !caps.has(op.keyId)) caps.set(op.keyId, op.cap);
  const keys = new Map<string, KeyStanding>();
  if (caps.size === 0) return keys;
  const keyIds = [...caps.keys()].sort();
  await lockKeys(tx, keyIds);
  const read = await readKeyStandings(
    tx,
    keyIds.map((keyId) => ({ keyId, days: caps.get(keyId)!.days })),
  );
  for (const keyId of keyIds) keys.set(keyId, read.get(keyId) ?? { usedNano: 0n, heldNano: 0n });
  await linkGroupCaps(tx, caps, keys);
  return keys;
}

/** Step 2: every op decided in order, in memory; a decision that breaks an invariant drops its op. */
function decideOps(ctx: RunContext, book: Book, batch: Pending[]) {
  const at = book.now; // one instant: the moves are written at the one their lots' expiry was judged at
  const outcomes: Outcome[] = [];
  const due: Due = [];
  const undecided: Undecided[] = [];
  for (const [index, p] of batch.entries()) {
    try {
      if (p.op.kind === 'reserve') {
        const r = book.reserve(p.op);
        if ('undecided' in r) {
          undecided.push({ index, op: p.op, usableNano: r.usableNano });
          outcomes.push({ ok: false, error: new Error('undecided') }); // replaced by decideRefusals
        } else if (!r.ok) {
          outcomes.push({ ok: true, value: r }); // over the key's cap: refused, nothing moved
        } else {
          outcomes.push({ ok: true, value: { ok: true, reservation: reservationOf(ctx.owner, p.op, r.lots) } });
        }
      } else {
        const o = book.finish(p.op, at);
        const moved = o.finished || (p.op.kind === 'draw' && !o.alreadyFinished);
        if ((p.op.kind === 'settle' || p.op.kind === 'draw') && p.op.rows && moved)
          due.push({ owner: p, rows: p.op.rows, chargedNano: o.chargedNano, transferId: p.op.drawId ?? p.op.id });
        outcomes.push({ ok: true, value: o });
      }
    } catch (e) {
      // A refusal of this op (thrown before it moved anything). Anything else is an inconsistency that may have
      // left part of the op's moves recorded in the Book: decide the batch again without it.
      if (!isGatewayError(e)) return broke(p, book, e);
      outcomes.push({ ok: false, error: e });
    }
  }
  return { outcomes, due, undecided };
}

/** Step 2b: the refusals, from the wallet facts read once for the whole batch. */
async function decideRefusals(
  ctx: RunContext,
  tx: Queryable,
  book: Book,
  batch: Pending[],
  undecided: Undecided[],
  outcomes: Outcome[],
): Promise<Verdict | null> {
  const facts = await readWalletFacts(
    tx,
    undecided.map((u) => u.op),
  );
  const planVendors = ctx.planVendors();
  for (const { index, op, usableNano } of undecided) {
    try {
      const d = book.reserveWithFacts(op, usableNano, facts.get(op.walletId, op.vendor), planVendors);
      outcomes[index] = { ok: true, value: d.ok ? { ok: true, reservation: reservationOf(ctx.owner, op, d.lots) } : d };
    } catch (e) {
      if (!isGatewayError(e)) return broke(batch[index]!, book, e);
      outcomes[index] = { ok: false, error: e };
    }
  }
  return null;
}

/** Steps 3 and 4: the moves with the charge rows grouped in one statement, then the rows' callbacks. */
async function writeDecided(
  ctx: RunContext,
  tx: Queryable,
  book: Book,
  due: Due,
  separately: boolean,
  outcomes: Outcome[],
): Promise<Verdict> {
  const grouped = groupedStatements(due, separately);
  const recorded = new Set(due.flatMap((d) => (d.owner.op.kind === 'draw' && rowsRecordTransfer(d.rows) ? [d.transferId] : [])));
  try {
    if (!book.moves.empty) await writeMoves(tx, ctx.owner, book.moves, grouped, recorded);
    else for (const s of grouped) await tx.query(s.sql, s.params);
  } catch (e) {
    // A lock waited for too long is the wallets' (their rows), not the charge rows': batcher.ts splits the batch.
    if (grouped.length > 0 && !isLockTimeout(e)) return { kind: 'rows-failed', grouped: true, error: e };
    throw e;
  }
  const failed = await writeUngroupedChargeRows(tx, due, separately);
  if (failed) return { kind: 'rows-failed', grouped: false, owner: failed.owner, error: failed.error };
  return { kind: 'done', outcomes };
}

/** The failure of an op whose decision broke an invariant, naming the wallet of its reservation as locked. */
const broke = (p: Pending, book: Book, cause: unknown): Verdict => ({
  kind: 'drop-op',
  owner: p,
  error: new LedgerInvariantBroken(p.op.kind, p.op.id, book.reservation(p.op.id)?.walletId ?? p.op.walletId, cause),
});

/** The reservation a reserve made: the op as submitted, less its kind and cap, with its owner and lots. */
function reservationOf(owner: string, op: ReserveOp, lots: ReservationLot[]): Reservation {
  const { kind: _kind, cap: _cap, ...made } = op;
  return { ...made, owner, lots };
}
