// What counts against daily limits beside the day's finished use: this process's calls in flight, and video jobs
// running on any process. The day's use counts only finished calls, so calls sent together would each see the whole
// day left. Other processes' calls are not seen: the contract allows that overshoot.
import { addCount } from '../core/counts.ts';
import { errors } from '../core/errors.ts';
import { VIDEO_CALL_PREFIX } from '../core/money.ts';
import { settledWithin } from '../core/wait.ts';
import type { Queryable } from '../db/db.ts';
import type { DayHeld } from './quota.ts';
import type { AuthContext } from './types.ts';

/** A call's hold is let go at its end; past this it is let go anyway, so a lost end cannot shut a key's day. */
const LONGEST_HOLD_MS = 15 * 60 * 1000;
/** Calls waiting for their turn on one key or class, at most; one more is refused (429, retry in a second). */
const MAX_WAITING = 256;
/** How long a call waits for its turn before it is refused the same way. */
const TURN_WAIT_MS = 5_000;

const NOTHING_HELD: DayHeld = { keyNano: 0n, groupNano: 0n };

// A video job's hold ends in its worker, maybe on another process, minutes later: it is read from its reservation.
const VIDEO_HOLDS_SQL = `
SELECT coalesce(sum(amount_nano) FILTER (WHERE key_id = $1), 0)::text AS key_nano, coalesce(sum(amount_nano), 0)::text AS group_nano
  FROM reservations
 WHERE state = 'held' AND starts_with(call_id, $3)
   AND key_id = ANY(ARRAY(SELECT id FROM api_keys WHERE group_id = $2) || $1::text)`;

interface Turns {
  /** Settles once every call ahead has let go of its turn. */
  tail: Promise<void>;
  /** Calls holding or waiting for a turn. */
  live: number;
}

export class DayHolds {
  private readonly held = new Map<string, bigint>();
  private readonly turns = new Map<string, Turns>();

  constructor(private readonly db: Queryable) {}

  /** What the other calls of the key and of its group hold now; a promise only for a key or class with a day. */
  of(auth: AuthContext): DayHeld | Promise<DayHeld> {
    const [key, group] = dayNames(auth);
    if (key === null && group === null) return NOTHING_HELD;
    return this.withVideos(auth, {
      keyNano: this.held.get(keyOf(auth)) ?? 0n,
      groupNano: auth.group ? (this.held.get(groupOf(auth.group.id)) ?? 0n) : 0n,
    });
  }

  private async withVideos(auth: AuthContext, inFlight: DayHeld): Promise<DayHeld> {
    const params = [auth.keyId, auth.group?.id ?? null, VIDEO_CALL_PREFIX];
    const row = (await this.db.query<{ key_nano: string; group_nano: string }>(VIDEO_HOLDS_SQL, params)).rows[0];
    return { keyNano: inFlight.keyNano + BigInt(row?.key_nano ?? 0), groupNano: inFlight.groupNano + BigInt(row?.group_nano ?? 0) };
  }

  /** Counts the call's hold; returns what lets it go (once, whoever calls it first). Nothing for a key without a day. */
  add(auth: AuthContext, amountNano: bigint): () => void {
    const counted = dayNamesOf(auth);
    if (counted.length === 0 || amountNano <= 0n) return () => undefined;
    for (const n of counted) addCount(this.held, n, amountNano);
    let timer: NodeJS.Timeout | undefined;
    const letGo = () => {
      if (timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      for (const n of counted) addCount(this.held, n, -amountNano);
    };
    timer = setTimeout(letGo, LONGEST_HOLD_MS).unref();
    return letGo;
  }

  /**
   * The call's turn to be planned and admitted, for a key or class with a day: one call of each at a time on this
   * process, so each is fitted to what the ones before it hold. Null when there is no day to keep.
   */
  turn(auth: AuthContext): Promise<() => void> | null {
    const names = dayNamesOf(auth);
    return names.length === 0 ? null : this.turnOf(names);
  }

  /** The key's turn, then the class's: always in that order, so two calls never wait on each other. */
  private async turnOf(names: string[]): Promise<() => void> {
    const taken: (() => void)[] = [];
    const letGo = () => {
      for (const t of taken) t();
    };
    try {
      for (const name of names) taken.push(await this.queue(name));
    } catch (e) {
      letGo();
      throw e;
    }
    return letGo;
  }

  private async queue(name: string): Promise<() => void> {
    const turns = this.turns.get(name) ?? { tail: Promise.resolve(), live: 0 };
    if (turns.live >= MAX_WAITING) throw busy();
    const ahead = turns.live > 0 ? turns.tail : null;
    let release: () => void = () => undefined;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    // A call that gave up waiting lets go at once; the calls behind it still wait for the ones ahead of it.
    turns.tail = ahead ? ahead.then(() => mine) : mine;
    turns.live++;
    this.turns.set(name, turns);
    let held = true;
    const letGo = () => {
      if (!held) return;
      held = false;
      release();
      if (--turns.live === 0 && this.turns.get(name) === turns) this.turns.delete(name);
    };
    if (ahead && !(await settledWithin(ahead, TURN_WAIT_MS))) {
      letGo();
      throw busy();
    }
    return letGo;
  }
}

const busy = () =>
  errors.keyLimit('Other calls of this key or its class are being admitted right now; retry in a second. Nothing was charged.', 1_000);

/** The names a call's day is counted under: its key's when the key has a daily limit, its class's when that has one. */
const dayNames = (auth: AuthContext): [string | null, string | null] => [
  auth.dailyLimitNano != null ? keyOf(auth) : null,
  auth.group?.dailyLimitNano != null ? groupOf(auth.group.id) : null,
];

/** Those of the names that count: none for a call with no day to keep. */
const dayNamesOf = (auth: AuthContext): string[] => dayNames(auth).filter((n): n is string => n !== null);

const keyOf = (auth: AuthContext) => `key\u0000${auth.keyId}`;
const groupOf = (groupId: string) => `group\u0000${groupId}`;
