// What `catalog check` refuses in a model that the schema lets through: a date no calendar has, and a
// successor that could not take over the model's calls.
import { afterEach, describe, expect, it } from 'vitest';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { ConfigFileError } from '../../engine/catalog/yaml-file.ts';
import { checkCatalog } from '../../engine/cli/catalog-cli.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree;
afterEach(() => tree?.remove());

/** The 1-based line of the first line containing `needle` at or after the line of model `id`. */
function lineIn(text: string, id: string, needle: string): number {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.trim() === `${id}:`);
  const found = lines.findIndex((l, i) => i >= start && l.includes(needle));
  if (start < 0 || found < 0) throw new Error(`'${needle}' of ${id} not found`);
  return found + 1;
}

function problemsAfter(relPath: string, change: (t: string) => string): { problems: string[]; text: string } {
  tree = tempCatalogTree();
  tree.edit(relPath, change);
  return { problems: checkCatalog(tree), text: tree.read(relPath) };
}

describe('catalog check: dates no calendar has', () => {
  it('refuses a sale end on 30 February, on its line, where JavaScript would read 2 March', () => {
    expect(new Date('2027-02-30T00:00:00Z').toISOString().slice(0, 10)).toBe('2027-03-02');
    const { problems, text } = problemsAfter('catalog/vendor-a.yaml', (t) =>
      t.replace('sale_ends: "2026-12-01"', 'sale_ends: "2027-02-30"'),
    );
    expect(problems).toEqual([
      `${tree.catalog}/vendor-a.yaml:${lineIn(text, 'a-small-3.5', 'sale_ends:')}: model 'a-small-3.5': sale_ends '2027-02-30' is not a calendar date (February 2027 has 28 days)`,
    ]);
    expect(() => loadSnapshot(tree, 1)).toThrow(ConfigFileError);
  });

  it('refuses a scheduled price starting on 31 April, and knows a leap year', () => {
    const { problems, text } = problemsAfter('catalog/vendor-c.yaml', (t) => t.replace('from: "2027-01-01"', 'from: "2027-04-31"'));
    expect(problems).toEqual([
      `${tree.catalog}/vendor-c.yaml:${lineIn(text, 'c-flash-3', 'scheduled:')}: model 'c-flash-3': pricing.scheduled[0].from '2027-04-31' is not a calendar date (April 2027 has 30 days)`,
    ]);
    tree.remove();
    expect(problemsAfter('catalog/vendor-c.yaml', (t) => t.replace('from: "2027-01-01"', 'from: "2028-02-29"')).problems).toEqual([]);
  });
});

describe('catalog check: successors that could not take over', () => {
  it('refuses a successor of another kind, on the successor line', () => {
    const { problems, text } = problemsAfter('catalog/vendor-a.yaml', (t) => t.replace('successor: a-small-4.5', 'successor: image-b-3'));
    expect(problems).toEqual([
      `${tree.catalog}/vendor-a.yaml:${lineIn(text, 'a-small-3.5', 'successor:')}: model 'a-small-3.5': successor 'image-b-3' is an image model, so it cannot take the text calls of this one`,
    ]);
  });

  it('refuses a successor on a model without a sale end', () => {
    const { problems, text } = problemsAfter('catalog/vendor-b.yaml', (t) =>
      t.replace(/(b-pro-5\.2:[\s\S]*?)successor: null/, '$1successor: o-pro-3'),
    );
    expect(problems).toEqual([
      `${tree.catalog}/vendor-b.yaml:${lineIn(text, 'b-pro-5.2', 'successor:')}: model 'b-pro-5.2': names successor 'o-pro-3' but no sale_ends date (a successor takes over when the sale ends)`,
    ]);
  });
});
