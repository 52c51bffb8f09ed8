// `catalog check` points at the line of the offending field (not the model's first line), says each
// mistake once, and offers the nearest valid name for a misspelt field, value, rule or model id.
import { afterEach, describe, expect, it } from 'vitest';
import { checkCatalog } from '../../engine/cli/catalog-cli.ts';
import { protocols } from '../../transforms/protocols/index.ts';
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

describe('catalog check: the line of the field, and the name meant', () => {
  // A reload took these once: from then on every call to the model was a 503 (RangeError in the price's conversion)
  // or a 402 for 72,000,000,000,025 credits. Each is now refused where it is written, and the old catalog serves.
  it.each([
    ['1e308', 'must be <= 100000'],
    ['1000000000000', 'must be <= 100000'],
    ['0.0000000001', 'price 1e-10 is not an amount the ledger counts (USD with at most 9 decimal places)'],
  ])('refuses a price the ledger cannot count or no vendor charges: input %s', (price, said) => {
    const { problems, text } = problemsAfter('catalog/vendor-b.yaml', (t) =>
      t.replace('pricing: { input: 5, output: 30, cache_read: 0.5 }', `pricing: { input: ${price}, output: 30, cache_read: 0.5 }`),
    );
    const line = lineIn(text, 'b-6', 'pricing:');
    expect(
      problems.find((p) => p.includes(said)),
      problems.join('\n'),
    ).toMatch(new RegExp(`vendor-b\\.yaml:${line}: `));
  });

  it('refuses a tier price finer than a nano-dollar, on its line', () => {
    const { problems, text } = problemsAfter('catalog/vendor-b.yaml', (t) =>
      t.replace(
        'tiers: [{ above_input_tokens: 272000, input: 10, output: 45 }]',
        'tiers: [{ above_input_tokens: 272000, input: 10.0000000001, output: 45 }]',
      ),
    );
    expect(problems).toContain(
      `${tree.catalog}/vendor-b.yaml:${lineIn(text, 'b-5.5', 'tiers:')}: model 'b-5.5': price 10.0000000001 is not an amount the ledger counts (USD with at most 9 decimal places)`,
    );
  });

  it('offers the field a misspelt field name most likely meant', () => {
    const { problems, text } = problemsAfter('catalog/vendor-a.yaml', (t) => t.replace('context_window: 200000', 'contex_window: 200000'));
    expect(problems).toContain(
      `${tree.catalog}/vendor-a.yaml:${lineIn(text, 'a-top-5.5', 'contex_window')}: unknown field 'contex_window' at /models/a-top-5.5 (did you mean 'context_window'?)`,
    );
  });

  it('offers the value a misspelt kind most likely meant, on the kind line', () => {
    const { problems, text } = problemsAfter('catalog/vendor-a.yaml', (t) => t.replace('kind: text', 'kind: txt'));
    expect(problems.join('\n')).toContain(
      `vendor-a.yaml:${lineIn(text, 'a-top-5.5', 'kind: txt')}: /models/a-top-5.5/kind must be equal to one of the allowed values (text, image, video, speech, embedding, moderation) (did you mean 'text'?)`,
    );
  });

  it('offers the rule a misspelt rule name most likely meant, on the rules line', () => {
    const { problems, text } = problemsAfter('catalog/vendor-a.yaml', (t) =>
      t.replace('rules: [drop-sampling, lower-forced-tool-choice]', 'rules: [drop-sampling, lower-forced-toolchoice]'),
    );
    expect(problems).toContain(
      `${tree.catalog}/vendor-a.yaml:${lineIn(text, 'a-top-5.5', 'toolchoice')}: model 'a-top-5.5': rule 'lower-forced-toolchoice' is not defined in config/rules.yaml (did you mean 'lower-forced-tool-choice'?)`,
    );
  });

  it('offers the model a misspelt successor or default model most likely meant', () => {
    let { problems, text } = problemsAfter('catalog/vendor-a.yaml', (t) => t.replace('successor: a-small-4.5', 'successor: a-smal-4.5'));
    expect(problems).toContain(
      `${tree.catalog}/vendor-a.yaml:${lineIn(text, 'a-small-3.5', 'successor:')}: model 'a-small-3.5': successor 'a-smal-4.5' does not exist (did you mean 'a-small-4.5'?)`,
    );
    tree.remove();

    ({ problems, text } = problemsAfter('config/doors.yaml', (t) =>
      t.replace('default_model: omni-moderation-latest', 'default_model: omni-moderation-lates'),
    ));
    expect(problems.join('\n')).toContain(
      `doors.yaml:${text.split('\n').findIndex((l) => l.includes('omni-moderation-lates')) + 1}: door 'moderations' defaults to 'omni-moderation-lates', a model the catalog does not define (did you mean 'omni-moderation-latest'?)`,
    );
  });

  it('offers nothing when no valid name is close', () => {
    const { problems } = problemsAfter('catalog/vendor-a.yaml', (t) => t.replace('successor: a-small-4.5', 'successor: zzz'));
    const line = problems.find((p) => p.includes("successor 'zzz'"));
    expect(line).toMatch(/successor 'zzz' does not exist$/);
  });

  it('puts a field required by another field on the line of the field that requires it', () => {
    const { problems, text } = problemsAfter('catalog/vendor-a.yaml', (t) => t.replace('    successor: a-small-4.5\n', ''));
    expect(problems).toEqual([
      `${tree.catalog}/vendor-a.yaml:${lineIn(text, 'a-small-3.5', 'sale_ends:')}: missing field 'successor' at /models/a-small-3.5 (A model with a sale-end date names its successor)`,
    ]);
  });

  it("says a bad value once, on its own line, without the schema's echoes on the model line", () => {
    const { problems, text } = problemsAfter('catalog/vendor-a.yaml', (t) =>
      t.replace('sale_ends: "2026-12-01"', 'sale_ends: "2026-13-01"'),
    );
    expect(problems).toEqual([
      `${tree.catalog}/vendor-a.yaml:${lineIn(text, 'a-small-3.5', 'sale_ends:')}: /models/a-small-3.5/sale_ends '2026-13-01' is not a Korean calendar date YYYY-MM-DD (the day starts 00:00 KST). Quote it in YAML.`,
    ]);
  });

  it('says what a value of the wrong type should be, once', () => {
    const { problems, text } = problemsAfter('catalog/vendor-b.yaml', (t) =>
      t.replace(/(b-pro-5\.2:[\s\S]*?)successor: null/, '$1successor: 5'),
    );
    expect(problems).toEqual([
      `${tree.catalog}/vendor-b.yaml:${lineIn(text, 'b-pro-5.2', 'successor: 5')}: /models/b-pro-5.2/successor must be null or string`,
    ]);
  });

  it('names a model whose rules a door would skip by its rules line', () => {
    // The images-with-count chain (transforms/protocols/media/) without its model-rules step, for this check only.
    const wire = protocols['images-with-count']!;
    const chain = wire.chains.images!;
    protocols['images-with-count'] = {
      ...wire,
      chains: { images: { ...chain, request: chain.request.filter((s) => s.name !== 'model-rules') } },
    };
    tree = tempCatalogTree();
    let problems: string[];
    try {
      problems = checkCatalog(tree);
    } finally {
      protocols['images-with-count'] = wire;
    }
    const media = tree.read('catalog/media.yaml');
    expect(problems.join('\n')).toContain(`image-d-1 (${tree.catalog}/media.yaml:${lineIn(media, 'image-d-1', 'rules:')})`);
  });
});
