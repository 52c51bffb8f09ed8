// The money's invariants, asserted where the running code relies on them (docs/money.md lists each and where).
// A broken one is a bug or a row changed by hand, never a client's doing: the move that would break it throws
// this before anything is written, so it fails alone and the money stays as it was.

export class MoneyInvariantBroken extends Error {
  override name = 'MoneyInvariantBroken';
}

/** Throws MoneyInvariantBroken saying `what` when `holds` is false. */
export function assertMoney(holds: boolean, what: () => string): asserts holds {
  if (!holds) throw new MoneyInvariantBroken(`money invariant broken: ${what()}`);
}
