// Which model to suggest for one the catalog does not have or the caller cannot pay for. Past a misspelling,
// spelling alone misleads (`gpt-4o-mini` is four edits from a reasoning model at another price), so the suggestion
// is the model most alike in kind, words and price, and only then the nearest spelling.
import { closest, distance } from 'fastest-levenshtein';
import type { ModelEntry } from '../core/types.ts';

/** What a suggestion should be like: the asked-for model's words, whether it reasons, and its price. */
interface Likeness {
  id: string;
  words: string[];
  reasoning: boolean;
  price: number;
}

/** An id's words: its parts between punctuation, version digits kept, single letters (a vendor's prefix) left out. */
const wordsOf = (id: string): string[] =>
  id
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1 || /\d/.test(w));
const hasDigit = (w: string) => /\d/.test(w);
const reasons = (m: ModelEntry) => (m.effort_levels?.length ?? 0) > 0;
const priceOf = (m: ModelEntry) => (m.pricing.input ?? 0) + (m.pricing.output ?? 0);
const likenessOf = (m: ModelEntry): Likeness => ({ id: m.id, words: wordsOf(m.id), reasoning: reasons(m), price: priceOf(m) });

/** The id that `id` most likely misspells: within two edits, or a third of its length. */
function misspelt(id: string, pool: readonly ModelEntry[]): ModelEntry | undefined {
  const best = closest(
    id,
    pool.map((m) => m.id),
  );
  return distance(id, best) <= Math.max(2, Math.floor(id.length / 3)) ? pool.find((m) => m.id === best) : undefined;
}

/**
 * The model of `pool` most like `target`: reasoning alike first, then shared words before price (`wordsFirst`, for
 * an id the catalog lacks, whose price only its words hint at) or price before words (a known model's price).
 */
function mostLike(target: Likeness, pool: readonly ModelEntry[], wordsFirst: boolean): ModelEntry | undefined {
  const rank = (m: ModelEntry) => {
    const words = wordsOf(m.id);
    const shared = target.words.filter((w) => words.includes(w)).reduce((sum, w) => sum + (hasDigit(w) ? 1 : 2), 0);
    const priceGap = Math.abs(Math.log((priceOf(m) + 1e-6) / (target.price + 1e-6)));
    const alike = reasons(m) === target.reasoning ? 0 : 1;
    return [alike, ...(wordsFirst ? [-shared, priceGap] : [priceGap, -shared]), distance(target.id, m.id)];
  };
  const ranked = pool.map((m) => ({ m, r: rank(m) }));
  ranked.sort((a, b) => compare(a.r, b.r));
  return ranked[0]?.m;
}

/** Ranks compared in order: the first that differs decides. */
const compare = (a: number[], b: number[]): number => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
};

/**
 * For an id the catalog lacks: its misspelling's model, else the model most like the family its version words
 * name (the nearest spelling among the models sharing one, else the nearest spelling overall).
 */
export function suggestForId(id: string, pool: readonly ModelEntry[]): ModelEntry | undefined {
  if (pool.length === 0) return undefined;
  const typo = misspelt(id, pool);
  if (typo) return typo;
  const versions = wordsOf(id).filter(hasDigit);
  const family = pool.filter((m) => wordsOf(m.id).some((w) => versions.includes(w)));
  const anchorId = closest(
    id,
    (family.length ? family : pool).map((m) => m.id),
  );
  const anchor = pool.find((m) => m.id === anchorId)!;
  return mostLike({ ...likenessOf(anchor), id, words: wordsOf(id) }, pool, true);
}

/** For a model the caller may not call: the model of `pool` (those it may: other vendors') most like it, by price before words. */
export function suggestLike(model: ModelEntry, pool: readonly ModelEntry[]): ModelEntry | undefined {
  return mostLike(likenessOf(model), pool, false);
}
