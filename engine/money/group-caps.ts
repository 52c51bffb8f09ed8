// Key groups in a batch: a group's cap is locked after its keys, in group id order so every process locks alike.
// Each of a group's keys then carries the group's figures, which the Book counts with the key's own.
import type { Queryable } from '../db/db.ts';
import type { KeyStanding } from './policy.ts';
import type { GroupCap, GroupFigures, KeyCap } from './types.ts';

/** `standings`: key id → standing, read by lockKeyCaps under the keys' locks; each group's keys then carry its figures. */
export async function linkGroupCaps(tx: Queryable, caps: ReadonlyMap<string, KeyCap>, standings: Map<string, KeyStanding>): Promise<void> {
  const groups = new Map<string, GroupCap>();
  for (const cap of caps.values()) if (cap.group && !groups.has(cap.group.groupId)) groups.set(cap.group.groupId, cap.group);
  for (const groupId of [...groups.keys()].sort()) {
    const read = await groups.get(groupId)!.lock(tx);
    const figures: GroupFigures = { groupId, limitNano: read.limitNano, usedNano: read.usedNano, heldNano: read.heldNano };
    for (const keyId of read.keyIds) {
      const own = standings.get(keyId);
      standings.set(keyId, { usedNano: own?.usedNano ?? 0n, heldNano: own?.heldNano ?? 0n, group: figures });
    }
  }
}
