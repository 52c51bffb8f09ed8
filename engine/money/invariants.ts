// A broken money invariant is a bug or a row changed by hand, never a client's doing: the move throws before
// anything is written, so it fails alone. Each invariant and where it is asserted: docs/money.md.

export class MoneyInvariantBroken extends Error {
  override name = 'MoneyInvariantBroken';
}

export function assertMoney(holds: boolean, what: () => string): asserts holds {
  if (!holds) throw new MoneyInvariantBroken(`money invariant broken: ${what()}`);
}
