// One run of a batch in its transaction (docs/decisions/ledger-exactness.md; the SQL is batch-sql.ts's):
//   1. lock the batch's lots, then the reservations it finishes, and read their holds; then the capped keys and groups;
//   2. decide the ops in queue order, in memory (a Book: policy.ts), as one op per transaction would;
//   3. write every move with the charge rows in one statement (batch-charge-rows.ts). The caller commits.
// A batch of draws each within its lease's hold writes their records alone (lease-records.ts), none of the above.
// A run that cannot commit as a whole says so (`failed`) rather than throwing, and batcher.ts runs each op alone.
import type { Clock } from '../core/clock.ts';
import { isGatewayError } from '../core/errors.ts';
import type { Queryable, Transaction } from '../db/db.ts';
import { lockKeys, readKeyStandings } from '../keys/index.ts';
import { type DueChargeRows, groupedStatements, recordedDraws, rowsRecordTransfer } from './batch-charge-rows.ts';
import type { Op, Pending } from './batch-queues.ts';
import { lockBatch, readDrawn, readWalletFacts, writeMoves } from './batch-sql.ts';
import { linkGroupCaps } from './group-caps.ts';
import { owedOnLease, writeOwed } from './lease-records.ts';
import { Book, type KeyStanding, looksForEarlierWrite, walletsMissingLocks } from './policy.ts';
import { isLockTimeout, isRetryable } from './retry.ts';
import type { FinishOutcome, KeyCap, KeyCapRefusal, ReserveOp, ReserveResult } from './types.ts';

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

export interface RunContext {
  clock: Clock;
  /** Owner written on new reservations. */
  owner: string;
  /** The plan-restricted vendors (not_in_plan), read when a run decides a refusal. */
  planVendors: () => readonly string[];
}

export type Outcome = { ok: true; value: ReserveResult | FinishOutcome } | { ok: false; error: unknown };

/**
 * How a run ends: every op decided and written (the caller commits, then settles each op), or the run cannot commit
 * as a whole (`error` is the cause; when the run held one op, that op's failure).
 */
type Verdict = { kind: 'done'; outcomes: Outcome[] } | { kind: 'failed'; error: unknown };

/** Charges decided, waiting for their rows to be written. */
type Due = DueChargeRows<Pending>[];

/** A reserve that needs the wallet facts (a refusal, or nothing to draw from) before it is final. */
interface Undecided {
  index: number;
  op: ReserveOp;
  usableNano: bigint;
}

/**
 * One run of a batch in transaction `tx`: its verdict. `alone`: the batch is one op run on its own, whose wallet is
 * read from its reservation rather than taken from the caller. Throws only what a retry may mend (a deadlock, a
 * lock waited for too long) or a lost connection.
 */
export async function processBatch(ctx: RunContext, tx: Transaction, batch: Pending[], alone: boolean): Promise<Verdict> {
  if (!alone && batch.every((p) => owedOnLease(p.op))) return writeOwed(tx, batch);
  const locked = await lockForBatch(tx, batch, alone);
  if ('kind' in locked) return locked;
  const book = new Book(locked.lots, locked.reservations, await lockKeyCaps(tx, batch), ctx.clock.now());
  for (const id of locked.drawnBefore) book.drawnBefore.add(id);
  const decided = decideOps(ctx, book, batch);
  if ('kind' in decided) return decided;
  if (decided.undecided.length > 0) {
    const broken = await decideRefusals(ctx, tx, book, batch, decided.undecided, decided.outcomes);
    if (broken) return broken;
  }
  const failed = await writeDecided(tx, ctx.owner, book, decided.due);
  return failed ?? { kind: 'done', outcomes: decided.outcomes };
}

/** What step 1 locked and read. */
type Locked = Awaited<ReturnType<typeof lockBatch>>;

/** Step 1: the batch's wallets' live lots and the reservations it finishes, locked; failed if a wallet was wrong. */
async function lockForBatch(tx: Queryable, batch: Pending[], alone: boolean): Promise<Locked | Verdict> {
  const walletIds = new Set<string>();
  const unknown: string[] = [];
  for (const p of batch) {
    if (p.op.walletId !== null && !(alone && p.op.kind !== 'reserve')) walletIds.add(p.op.walletId);
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
  // Draws retried after an unclear commit are looked for among the charges written (read with the holds), not made twice;
  // so are those run alone after their batch failed, which may have committed (a connection lost with its COMMIT sent).
  const draws = finishes.filter((op) => op.kind === 'draw' && op.drawId && (alone || looksForEarlierWrite(op)));
  const locked = await lockBatch(
    tx,
    [...walletIds],
    [...new Set(finishes.map((op) => op.id))],
    draws.map((op) => op.drawId!),
    recordedDraws(draws),
  );
  // A first try's intent kept while the locks were awaited may have been replayed by the session that held them.
  const late = finishes.filter((op) => op.kind === 'draw' && op.drawId && !draws.includes(op) && looksForEarlierWrite(op));
  const lateIds = late.map((op) => op.drawId!);
  for (const id of late.length > 0 ? await readDrawn(tx, lateIds, recordedDraws(late)) : []) locked.drawnBefore.add(id);
  const missing = walletsMissingLocks(finishes, locked.reservations, walletIds);
  if (missing.length > 0)
    return { kind: 'failed', error: new Error(`ledger: finishes named the wrong wallet of ${missing.join(', ')}`) } satisfies Verdict;
  return locked;
}

/**
 * Step 1b: locks every key whose cap a reserve of the batch carries (key id order, the first reserve's cap standing
 * for the key), then reads in one statement each key's finished use of its cap's month and what its held
 * reservations hold; then its group's (group-caps.ts).
 */
async function lockKeyCaps(tx: Queryable, batch: Pending[]): Promise<Map<string, KeyStanding>> {
  const caps = new Map<string, KeyCap>();
  for (const { op } of batch) if (op.kind === 'reserve' && op.cap && op.keyId !== null && !caps.has(op.keyId)) caps.set(op.keyId, op.cap);
  if (caps.size === 0) return new Map();
  const keyIds = [...caps.keys()].sort();
  await lockKeys(tx, keyIds);
  const days = keyIds.map((keyId) => ({ keyId, days: caps.get(keyId)!.days }));
  const read = await readKeyStandings(tx, days);
  const keys = new Map<string, KeyStanding>(keyIds.map((keyId) => [keyId, read.get(keyId) ?? { usedNano: 0n, heldNano: 0n }]));
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
        } else outcomes.push({ ok: true, value: answerOf(ctx.owner, p.op, r) }); // made, or refused over the key's cap (nothing moved)
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
  const ops = undecided.map((u) => u.op);
  const facts = await readWalletFacts(tx, ops);
  const planVendors = ctx.planVendors();
  for (const { index, op, usableNano } of undecided) {
    try {
      const d = book.reserveWithFacts(op, usableNano, facts.get(op.walletId, op.vendor), planVendors);
      outcomes[index] = { ok: true, value: answerOf(ctx.owner, op, d) };
    } catch (e) {
      if (!isGatewayError(e)) return broke(batch[index]!, book, e);
      outcomes[index] = { ok: false, error: e };
    }
  }
  return null;
}

/** Step 3: the moves with the charge rows, in one statement; charge rows the database refuses fail the run (null: written). */
async function writeDecided(tx: Transaction, owner: string, book: Book, due: Due): Promise<Verdict | null> {
  const grouped = groupedStatements(due);
  const recorded = new Set(due.flatMap((d) => (d.owner.op.kind === 'draw' && rowsRecordTransfer(d.rows) ? [d.transferId] : [])));
  try {
    if (!book.moves.empty) await writeMoves(tx, owner, book.moves, { chargeRows: grouped, recordedDraws: recorded, last: true });
    else for (const s of grouped) await tx.query(s.sql, s.params);
  } catch (e) {
    // A deadlock is tried again, and a lock waited for too long is the wallets' rows, not the charge rows'.
    if (due.length > 0 && !isLockTimeout(e) && !isRetryable(e)) return { kind: 'failed', error: e };
    throw e;
  }
  return null;
}

/** The failure of an op whose decision broke an invariant, naming the wallet of its reservation as locked. */
const broke = (p: Pending, book: Book, cause: unknown): Verdict => ({
  kind: 'failed',
  error: new LedgerInvariantBroken(p.op.kind, p.op.id, book.reservation(p.op.id)?.walletId ?? p.op.walletId, cause),
});

/** A reserve's answer: its refusal, or the reservation made (the op as submitted, less its kind and cap, with its owner and lots). */
function answerOf(owner: string, op: ReserveOp, d: ReturnType<Book['reserveWithFacts']> | KeyCapRefusal): ReserveResult {
  if (!d.ok) return d;
  const { kind: _kind, cap: _cap, ...made } = op;
  return { ok: true, reservation: { ...made, owner, lots: d.lots } };
}
