import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { diffCatalogs, rawModels } from '../../engine/catalog/catalog-diff.ts';
import { renderDiffTable } from '../../engine/catalog/diff-table.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree;
afterEach(() => tree?.remove());

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' });

describe('catalog diff', () => {
  it('prints a one-row table for a commit that changes one price', () => {
    tree = tempCatalogTree();
    git(tree.root, 'init', '-q');
    git(tree.root, 'add', '.');
    git(tree.root, 'commit', '-qm', 'base');
    tree.edit('catalog/vendor-b.yaml', (t) => t.replace(/(b-pro-5\.2:[\s\S]*?input: )21\b/, '$1 24'));
    const out = execFileSync(process.execPath, [`${process.cwd()}/bin/gateway.mjs`, 'catalog', 'diff', 'HEAD'], {
      cwd: tree.root,
      env: { ...process.env, GATEWAY_CATALOG_DIR: tree.catalog, GATEWAY_CONFIG_DIR: tree.config },
      encoding: 'utf8',
    });
    const rows = out.trim().split('\n');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toBe('| Model | Field | Old | New | Unit | Change |');
    expect(rows[2]).toBe('| b-pro-5.2 | pricing.input | 21 | 24 | USD per 1M tokens | +14.29% |');
  });

  it('reports tiers, thresholds, context windows, sale-end dates and successors', () => {
    const before = rawModels([
      {
        name: 'x.yaml',
        text: `models:
  m1:
    context_window: 200000
    pricing: { input: 2, output: 8, tiers: [{ above_input_tokens: 200000, input: 4, output: 12 }] }
    sale_ends: null
    successor: null
  gone: { pricing: { input: 1, output: 1 } }
`,
      },
    ]);
    const after = rawModels([
      {
        name: 'x.yaml',
        text: `models:
  m1:
    context_window: 400000
    pricing: { input: 2, output: 8, tiers: [{ above_input_tokens: 200000, input: 3, output: 12 }] }
    sale_ends: "2026-12-01"
    successor: m2
  m2: { pricing: { input: 1, output: 1 } }
`,
      },
    ]);
    const table = renderDiffTable(diffCatalogs(before, after));
    expect(table).toContain('| gone | (model) | present | — |  | removed |');
    expect(table).toContain('| m1 | tier above 200000 input | 4 | 3 | USD per 1M tokens | -25% |');
    expect(table).toContain('| m1 | context_window | 200000 | 400000 | tokens |  |');
    expect(table).toContain('| m1 | sale_ends | — | 2026-12-01 | date (KST) |  |');
    expect(table).toContain('| m1 | successor | — | m2 |  |  |');
    expect(table).toContain('| m2 | (model) | — | added |  | new model |');
  });

  it('says so when nothing reviewed changed', () => {
    const same = rawModels([{ name: 'x.yaml', text: 'models:\n  m: { pricing: { input: 1, output: 2 } }\n' }]);
    expect(renderDiffTable(diffCatalogs(same, same))).toMatch(/^No price/);
  });
});
