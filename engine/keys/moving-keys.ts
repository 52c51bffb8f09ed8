// A key moving to another class, as this process knows it: while the move is decided, no call of the key is admitted,
// and the calls being admitted when the move was announced finish their admission before this process tells what
// they hold. So the move's check sees every call of the key on every process, and no call admitted under the old
// class is charged to the new one unchecked (key-moves.ts).

import { errors } from '../core/errors.ts';

/** The announcement of a move names `moving:<key id>`; the move's own change (or its refusal) names the key. */
export const MOVING_PREFIX = 'moving:';
/** How long a mark stays when the move's end is never heard (its process died): the longest a key's calls pause. */
const MARK_MS = 10_000;
/** How long a move's announcement waits here for admissions under way (within the mover's 2 s wait). */
const DRAIN_MS = 1_500;
/** Keys marked at most: a mark past this many is forgotten oldest first (its move then checks as before). */
const MAX_MARKS = 10_000;

/** What a change names once a move's mark is taken off: the key itself, a wallet, or `*`. */
export const keyNamed = (target: string): string => (target.startsWith(MOVING_PREFIX) ? target.slice(MOVING_PREFIX.length) : target);

export class MovingKeys {
  private readonly marks = new Map<string, number>();
  /** Admissions under way, per key. */
  private readonly admitting = new Map<string, number>();
  private readonly waiters = new Set<() => void>();

  /** Applies an announced change here: `moving:<id>` marks the key, a change naming the key ends its mark. */
  apply(target: string): void {
    if (!target.startsWith(MOVING_PREFIX)) {
      this.marks.delete(target);
      return;
    }
    const keyId = keyNamed(target);
    this.marks.delete(keyId);
    this.marks.set(keyId, Date.now() + MARK_MS);
    if (this.marks.size > MAX_MARKS) this.marks.delete(this.marks.keys().next().value!);
  }

  /**
   * Starts the admission of a call of `keyId`: 429 (retry in a second) while the key moves. The returned function
   * ends it, whatever the admission's outcome.
   */
  begin(keyId: string): () => void {
    const until = this.marks.get(keyId);
    if (until !== undefined) {
      if (until > Date.now()) {
        throw errors.keyLimit('This key is being moved to another class; nothing was charged. Retry in a moment.', 1_000);
      }
      this.marks.delete(keyId);
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

  /** Resolves once no admission of the key named by `moving:<id>` is under way here, or after DRAIN_MS; at once otherwise. */
  drained(target: string): Promise<void> {
    const keyId = keyNamed(target);
    if (keyId === target || !this.admitting.has(keyId)) return Promise.resolve();
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
