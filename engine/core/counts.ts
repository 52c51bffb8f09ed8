// Counts kept in a map of bigints, for what calls in flight hold per name (a lease's keys, a key's day).

/** Adds `n` to the count of `name`; a count brought to zero (or below) leaves the map. */
export function addCount<K>(counts: Map<K, bigint>, name: K, n: bigint): void {
  const left = (counts.get(name) ?? 0n) + n;
  if (left > 0n) counts.set(name, left);
  else counts.delete(name);
}
