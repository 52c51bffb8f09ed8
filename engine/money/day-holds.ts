// This process's calls in flight against daily limits: the day's use counts only finished calls, so calls sent
// together would each see the whole day left. Other processes' are not seen: the contract allows that overshoot.
import type { AuthContext, DayHeld } from '../keys/index.ts';
import { addCount } from './lease-state.ts';

/** A call's hold is let go at its end; past this it is let go anyway, so a lost end cannot shut a key's day. */
const LONGEST_HOLD_MS = 15 * 60 * 1000;

export class DayHolds {
  private readonly held = new Map<string, bigint>();

  /** What the other calls of the key and of its group hold now. */
  of(auth: AuthContext): DayHeld {
    return { keyNano: this.held.get(keyOf(auth)) ?? 0n, groupNano: auth.group ? (this.held.get(groupOf(auth.group.id)) ?? 0n) : 0n };
  }

  /** Counts the call's hold; returns what lets it go (once, whoever calls it first). Nothing for a key without a day. */
  add(auth: AuthContext, amountNano: bigint): () => void {
    const names = [auth.dailyLimitNano != null ? keyOf(auth) : null, auth.group?.dailyLimitNano != null ? groupOf(auth.group.id) : null];
    const counted = names.filter((n): n is string => n !== null);
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
}

const keyOf = (auth: AuthContext) => `key\u0000${auth.keyId}`;
const groupOf = (groupId: string) => `group\u0000${groupId}`;
