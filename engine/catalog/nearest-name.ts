// A misspelt name in the YAML (a field, a rule, a model id) is reported with the valid name it most
// likely meant, so the fix is one glance away. Only close names are offered: a guess that shares little
// with what was written would send the operator the wrong way.
import { closest, distance } from 'fastest-levenshtein';

/** The candidate nearest to `name`, when it is a plausible misspelling of it. */
function nearestName(name: string, candidates: Iterable<string>): string | undefined {
  const pool = [...candidates].filter((c) => c !== name);
  if (pool.length === 0) return undefined;
  const best = closest(name, pool);
  // Two edits always pass (a swapped pair of letters, one letter too many); longer names allow a third of their length.
  return distance(name, best) <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

/** ` (did you mean 'x'?)`, or nothing when no candidate is close. */
export function didYouMean(name: string, candidates: Iterable<string>): string {
  const best = nearestName(name, candidates);
  return best === undefined ? '' : ` (did you mean '${best}'?)`;
}
