// Key groups in a batch: a group's cap is locked after its keys, in group id order so every process locks alike.
// A linked standing repeats each change to a key's figures on its group's, so the Book needs no group code.
import type { Queryable } from '../db/db.ts';
import type { KeyStanding } from './policy.ts';
import type { GroupCap, GroupFigures, KeyCap } from './types.ts';

class LinkedStanding implements KeyStanding {
  #used: bigint;
  #held: bigint;
  constructor(
    used: bigint,
    held: bigint,
    readonly group: GroupFigures,
  ) {
    this.#used = used;
    this.#held = held;
  }
  get usedNano(): bigint {
    return this.#used;
  }
  set usedNano(v: bigint) {
    this.group.usedNano += v - this.#used;
    this.#used = v;
  }
  get heldNano(): bigint {
    return this.#held;
  }
  set heldNano(v: bigint) {
    this.group.heldNano += v - this.#held;
    this.#held = v;
  }
}

/** `standings`: key id → standing, read by lockKeyCaps under the keys' locks; each group's keys then carry its figures. */
export async function linkGroupCaps(tx: Queryable, caps: ReadonlyMap<string, KeyCap>, standings: Map<string, KeyStanding>): Promise<void> {
  const groups = new Map<string, GroupCap>();
  for (const cap of caps.values()) if (cap.group && !groups.has(cap.group.groupId)) groups.set(cap.group.groupId, cap.group);
  for (const groupId of [...groups.keys()].sort()) {
    const read = await groups.get(groupId)!.lock(tx);
    const figures: GroupFigures = { groupId, limitNano: read.limitNano, usedNano: read.usedNano, heldNano: read.heldNano };
    for (const keyId of read.keyIds) {
      const own = standings.get(keyId);
      standings.set(keyId, new LinkedStanding(own?.usedNano ?? 0n, own?.heldNano ?? 0n, figures));
    }
  }
}
