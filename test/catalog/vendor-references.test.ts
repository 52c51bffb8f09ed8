// config/vendors.yaml is the one list of vendors: a vendor named anywhere else in config/ or catalog/ that is
// not one of its keys is refused at `file:line`, and billing.yaml's per-vendor framing must cover every vendor.
import { afterEach, describe, expect, it } from 'vitest';
import { checkCatalog } from '../../engine/cli/catalog-cli.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree;
afterEach(() => tree?.remove());

/** The 1-based line of the first line of `text` containing `needle`. */
function lineOf(text: string, needle: string): number {
  const i = text.split('\n').findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`'${needle}' not found`);
  return i + 1;
}

/** The problems `catalog check` finds once `relPath` is changed, and the file's new text. */
function problemsAfter(relPath: string, change: (t: string) => string): { problems: string[]; text: string } {
  tree = tempCatalogTree();
  tree.edit(relPath, change);
  return { problems: checkCatalog(tree), text: tree.read(relPath) };
}

const NOT_DEFINED = 'which config/vendors.yaml does not define (its vendors: a, b, c, d, e)';

describe('vendors named outside config/vendors.yaml', () => {
  it('the sound tree has none', () => {
    tree = tempCatalogTree();
    expect(checkCatalog(tree)).toEqual([]);
  });

  it("refuses a catalog file's vendor on the model's line", () => {
    const { problems, text } = problemsAfter('catalog/vendor-e.yaml', (t) => t.replace('vendor: e\n', 'vendor: z\n'));
    expect(problems).toContain(
      `${tree.catalog}/vendor-e.yaml:${lineOf(text, 'e-open-405b:')}: model 'e-open-405b': names vendor 'z', ${NOT_DEFINED}`,
    );
    // Said once a model: no "no door serves" besides.
    expect(problems.filter((p) => p.includes("'e-open-405b'"))).toHaveLength(1);
  });

  it("refuses a model's own vendor on its vendor line", () => {
    const { problems, text } = problemsAfter('catalog/vendor-e.yaml', (t) =>
      t.replace('  e-open-70b:\n    kind: text\n', '  e-open-70b:\n    vendor: f\n    kind: text\n'),
    );
    expect(problems).toEqual([
      `${tree.catalog}/vendor-e.yaml:${lineOf(text, 'vendor: f')}: model 'e-open-70b': names vendor 'f', ${NOT_DEFINED}`,
    ]);
  });

  it("refuses a door's served vendor, vendor_protocol key and refusal vendor", () => {
    const { problems, text } = problemsAfter('config/doors.yaml', (t) =>
      t
        .replace('serves: { kinds: [text], vendors: [a, b, c, d, e] }', 'serves: { kinds: [text], vendors: [a, b, c, d, e, z] }')
        .replace(
          "vendor_protocol: { a: messages, '*': chat-completions }",
          "vendor_protocol: { a: messages, y: messages, '*': chat-completions }",
        )
        .replace('      vendors: [b]\n', '      vendors: [b, x]\n'),
    );
    const doors = `${tree.config}/doors.yaml`;
    expect(problems).toEqual(
      expect.arrayContaining([
        `${doors}:${lineOf(text, 'vendors: [a, b, c, d, e, z]')}: door 'chat' serves names vendor 'z', ${NOT_DEFINED}`,
        `${doors}:${lineOf(text, 'y: messages')}: door 'chat' vendor_protocol names vendor 'y', ${NOT_DEFINED}`,
        `${doors}:${lineOf(text, 'vendors: [b, x]')}: door 'chat' refusal names vendor 'x', ${NOT_DEFINED}`,
      ]),
    );
  });

  it("refuses billing.yaml's per-vendor names, and framing missing for a vendor", () => {
    const { problems, text } = problemsAfter('config/billing.yaml', (t) =>
      t
        .replace('plan_restricted_vendors: [c]', 'plan_restricted_vendors: [c, q]')
        .replace('output_cap_written: { e: max_tokens }', 'output_cap_written: { e: max_tokens, r: max_tokens }')
        .replace('framing_per_call: { a: 16, b: 16, c: 16, d: 16, e: 64 }', 'framing_per_call: { a: 16, b: 16, c: 16, d: 16, e: 64, s: 1 }')
        .replace('framing_per_message: { a: 8, b: 8, c: 8, d: 8, e: 8 }', 'framing_per_message: { a: 8, b: 8, c: 8, d: 8 }')
        .replace('cache_writes_when_marked: [a]', 'cache_writes_when_marked: [a, t]'),
    );
    const billing = `${tree.config}/billing.yaml`;
    expect(problems).toEqual([
      `${billing}:${lineOf(text, 'plan_restricted_vendors: [c, q]')}: plan_restricted_vendors names vendor 'q', ${NOT_DEFINED}`,
      `${billing}:${lineOf(text, 'cache_writes_when_marked: [a, t]')}: reservation.cache_writes_when_marked names vendor 't', ${NOT_DEFINED}`,
      `${billing}:${lineOf(text, 'output_cap_written:')}: reservation.output_cap_written names vendor 'r', ${NOT_DEFINED}`,
      `${billing}:${lineOf(text, 'framing_per_call:')}: reservation.framing_per_call names vendor 's', ${NOT_DEFINED}`,
      `${billing}:${lineOf(text, 'framing_per_message:')}: reservation.framing_per_message has no entry for vendor 'e' (config/vendors.yaml); every vendor needs one`,
    ]);
  });

  it("refuses a rule's refusal vendor", () => {
    const { problems, text } = problemsAfter('config/rules.yaml', (t) =>
      t.replace(
        'or use /v1/responses for tools with reasoning."\n',
        'or use /v1/responses for tools with reasoning."\n      vendors: [bb]\n',
      ),
    );
    expect(problems).toEqual([
      `${tree.config}/rules.yaml:${lineOf(text, 'vendors: [bb]')}: rule 'tools-need-effort-none' refusal names vendor 'bb', ${NOT_DEFINED}`,
    ]);
  });

  it('a vendor removed from vendors.yaml is refused wherever it is still named', () => {
    const { problems } = problemsAfter('config/vendors.yaml', (t) => t.replace(/\ne:\n {2}name: Vendor E\n.*\n/, '\n'));
    const said = problems.join('\n');
    expect(said).toContain("door 'chat' serves names vendor 'e', which config/vendors.yaml does not define (its vendors: a, b, c, d)");
    expect(said).toContain("reservation.framing_per_call names vendor 'e'");
    expect(said).toContain("model 'e-open-405b': names vendor 'e'");
  });
});
