// A model whose sale has ended is marked `retired: true` in its catalog entry: the entry stays, so its callers
// are told the successor, and neither the start nor `catalog check --strict` warns of the date again. The
// shipped catalog marks the models whose sale ended (2026-10-23 and 2026-12-01), so a fresh clone passes --strict.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { modelOnSale } from '../../engine/catalog/model-lookup.ts';
import { formatWarning } from '../../engine/catalog/model-warnings.ts';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { checkCatalog, reviewCatalog } from '../../engine/cli/catalog-cli.ts';
import { type TempTree, tempCatalogTree, unretired } from '../helpers/temp-catalog.ts';

let tree: TempTree;
afterEach(() => tree?.remove());

const shipped = { config: 'config', catalog: 'catalog' };
/** The day before the shipped catalog's latest sale ends (2026-12-01), long after the earlier ones (2026-10-23). */
const now = new Date('2026-11-30T00:00:00+09:00');

/** The 1-based line of the first line containing `needle` at or after the line of model `id`. */
function lineIn(text: string, id: string, needle: string): number {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.trim() === `${id}:`);
  return lines.findIndex((l, i) => i >= start && l.includes(needle)) + 1;
}

describe('retired models', () => {
  it('the shipped catalog passes --strict with no warning, and its retired models still point callers to the successor', () => {
    const ended = new Date('2026-12-01T00:00:00+09:00');
    expect(reviewCatalog(shipped, { now: ended, strict: true })).toEqual({ problems: [], warnings: [] });
    const snapshot = new Runtime(shipped).snapshot();
    for (const [id, sale_ends, successor] of [
      ['o-pro-1', '2026-10-23', 'o-pro-3'],
      ['image-b-5', '2026-10-23', 'image-b-3'],
      ['image-b-4', '2026-12-01', 'image-b-3'],
      ['image-b-6', '2026-12-01', 'image-b-3'],
      ['a-small-3.5', '2026-12-01', 'a-small-4.5'],
    ]) {
      expect(snapshot.catalog.models.get(id!)).toMatchObject({ retired: true, sale_ends, successor });
      expect(() => modelOnSale(snapshot.catalog, id!, ended)).toThrow(`Use its successor '${successor}'`);
    }
  });

  it('unmarked, a sale end that has come is a warning that says how to mark it, and a --strict problem', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-b.yaml', (t) => unretired(t, 'o-pro-1'));
    const line = lineIn(tree.read('catalog/vendor-b.yaml'), 'o-pro-1', 'sale_ends:');
    const warning = `${tree.catalog}/vendor-b.yaml:${line}: warning: model 'o-pro-1': sale_ends 2026-10-23 has come: the model is no longer sold (mark it \`retired: true\` to keep pointing its callers to 'o-pro-3' without this warning, or remove it once they have moved)`;
    expect(reviewCatalog(tree, { now }).warnings.map(formatWarning)).toEqual([warning]);
    expect(checkCatalog(tree, { now, strict: true })).toEqual([warning.replace(': warning: ', ': ')]);
  });

  it('marked ahead of its sale end, it is still sold until then, and nothing warns before or after', () => {
    const snapshot = new Runtime(shipped).snapshot();
    expect(modelOnSale(snapshot.catalog, 'a-small-3.5', now).id).toBe('a-small-3.5');
    expect(() => modelOnSale(snapshot.catalog, 'a-small-3.5', new Date('2026-12-01T00:00:00+09:00'))).toThrow(
      /Use its successor 'a-small-4\.5'/,
    );
    const after = new Date('2026-12-02T00:00:00+09:00');
    expect(reviewCatalog(shipped, { now: after, strict: true }).problems.join('\n')).not.toContain('a-small-3.5');
    expect(reviewCatalog(shipped, { now }).warnings).toEqual([]);
  });

  it('retired without a sale-end date is refused, on the sale_ends line', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-e.yaml', (t) => t.replace(/( {4}successor: null\n)/, '$1    retired: true\n'));
    const line =
      tree
        .read('catalog/vendor-e.yaml')
        .split('\n')
        .findIndex((l) => l.includes('sale_ends: null')) + 1;
    expect(checkCatalog(tree, { now })).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${tree.catalog}/vendor-e\\.yaml:${line}: /models/[^/]+/sale_ends must be string \\(A retired model keeps the sale-end date it was sold until\\)$`,
        ),
      ),
    ]);
  });

  it('a retired model is refused to callers exactly as before: its successor is named', () => {
    const snapshot = new Runtime(shipped).snapshot();
    expect(() => modelOnSale(snapshot.catalog, 'o-pro-1', now)).toThrow(/no longer sold since 2026-10-23\. Use its successor 'o-pro-3'/);
    expect(readFileSync('catalog/vendor-b.yaml', 'utf8')).toMatch(/ {2}o-pro-1:\n(?: {4}.*\n)*? {4}retired: true/);
  });
});
