// A key moving to another class, as this process knows it: while the move is decided, no call of the key is admitted,
// and the calls being admitted when the move was announced finish their admission before this process tells what
// they hold. So the move's check sees every call of the key on every process, and no call admitted under the old
// class is charged to the new one unchecked (key-moves.ts).

import { randomBytes } from 'node:crypto';
import { errors } from '../core/errors.ts';

/**
 * A move is announced as `moving:<tag>:<key id>` and ends with `moved:<tag>:<key id>` (its change, or its refusal):
 * each move of a key ends its own mark only, so two moves of one key at once keep the key marked until both end.
 */
const MARK = /^(moving|moved):([0-9a-f]+):(.+)$/;

/** The two changes one move announces: its start, and its end. */
export function moveMarks(keyId: string): { start: string; end: string } {
  const tag = randomBytes(6).toString('hex');
  return { start: `moving:${tag}:${keyId}`, end: `moved:${tag}:${keyId}` };
}

/** What a change names once a move's mark is taken off: the key itself, a wallet, or `*`. */
export const keyNamed = (target: string): string => MARK.exec(target)?.[3] ?? target;

/** How long a mark stays when the move's end is never heard (its process died): the longest a key's calls pause. */
const MARK_MS = 10_000;
/** How long a move's announcement waits here for admissions under way (within the mover's 2 s wait). */
const DRAIN_MS = 1_000;
/** Keys marked at most: a mark past this many is forgotten oldest first (its move then checks as before). */
const MAX_MARKS = 10_000;

export class MovingKeys {
  /** Key id → its moves under way here: tag → when the mark lapses. */
  private readonly marks = new Map<string, Map<string, number>>();
  /** Admissions under way, per key. */
  private readonly admitting = new Map<string, number>();
  private readonly waiters = new Set<() => void>();
  /** Every start and end of a move applied here, counted; and, per key, the count at its last. */
  private moves = 0;
  private readonly movedAt = new Map<string, number>();

  /** The count of moves applied here: a key read after this saw every move applied before it. */
  seen(): number {
    return this.moves;
  }

  /** Applies an announced change here: a move's start marks its key, its end takes that mark off; others do nothing. */
  apply(target: string): void {
    const m = MARK.exec(target);
    if (!m) return;
    const [kind, tag, keyId] = [m[1]!, m[2]!, m[3]!]; // the pattern's three groups, never optional
    this.movedAt.delete(keyId);
    this.movedAt.set(keyId, ++this.moves);
    if (this.movedAt.size > MAX_MARKS) this.movedAt.delete(this.movedAt.keys().next().value!);
    const moves = this.marks.get(keyId) ?? new Map<string, number>();
    if (kind === 'moved') moves.delete(tag);
    else moves.set(tag, Date.now() + MARK_MS);
    this.marks.delete(keyId);
    if (moves.size > 0) this.marks.set(keyId, moves);
    if (this.marks.size > MAX_MARKS) this.marks.delete(this.marks.keys().next().value!);
  }

  /** Whether a move of the key is under way here (a mark past its time is dropped). */
  private moving(keyId: string): boolean {
    const moves = this.marks.get(keyId);
    if (!moves) return false;
    const now = Date.now();
    for (const [tag, until] of moves) if (until <= now) moves.delete(tag);
    if (moves.size === 0) this.marks.delete(keyId);
    return moves.size > 0;
  }

  /**
   * Starts the admission of a call of `keyId`, read when the count of moves was `seen`: 429 (retry in a second) while
   * the key moves, or when it moved since it was read (its class may have changed). The returned function ends it,
   * whatever the admission's outcome.
   */
  begin(keyId: string, seen = Number.POSITIVE_INFINITY): () => void {
    if (this.moving(keyId) || (this.movedAt.get(keyId) ?? 0) > seen) {
      throw errors.keyLimit('This key is being moved to another class; nothing was charged. Retry in a moment.', 1_000);
    }
    this.admitting.set(keyId, (this.admitting.get(keyId) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.admitting.get(keyId) ?? 1) - 1;
      if (left > 0) this.admitting.set(keyId, left);
      else this.admitting.delete(keyId);
      for (const wake of [...this.waiters]) wake();
    };
  }

  /** Resolves once no admission of the key a move's start names is under way here, or after DRAIN_MS; at once otherwise. */
  drained(target: string): Promise<void> {
    const m = MARK.exec(target);
    const keyId = m?.[3];
    if (m?.[1] !== 'moving' || keyId === undefined || !this.admitting.has(keyId)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const check = () => {
        if (!this.admitting.has(keyId)) done();
      };
      const timer = setTimeout(done, DRAIN_MS);
      this.waiters.add(check);
    });
  }
}
