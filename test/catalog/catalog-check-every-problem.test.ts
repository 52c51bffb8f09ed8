// `catalog check` lists every problem in one run, each once: a model that fails the schema no longer hides the
// date and successor problems of the others in its file, a broken config file no longer hides the next one or
// the catalog's own, and a wrong type is one line. The command finds the project from any folder.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkCatalog } from '../../engine/cli/catalog-cli.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree;
afterEach(() => tree?.remove());

/** The problems, with the tree's folder taken off so they read as relative paths. */
const problemsOf = (t: TempTree) => checkCatalog(t).map((p) => p.replace(`${t.root}/`, '').replace(/:\d+:/, ':L:'));

describe('catalog check: every problem in one run', () => {
  it('a model that fails the schema hides neither the other models of its file nor those of other files', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-b.yaml', (t) => t.replace(/( {2}o-3:\n(?: {4}.*\n)*? {4}context_window:) 200000/, '$1 "big"'));
    tree.edit('catalog/vendor-b.yaml', (t) => t.replace('successor: o-pro-3', 'successor: o-pro-9'));
    tree.edit('catalog/vendor-a.yaml', (t) => t.replace('sale_ends: "2026-12-01"', 'sale_ends: "2026-02-30"'));
    const problems = problemsOf(tree);
    expect(problems).toHaveLength(3);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^catalog\/vendor-b\.yaml:L: \/models\/o-3\/context_window must be integer \(Text models need/),
        "catalog/vendor-b.yaml:L: model 'o-pro-1': successor 'o-pro-9' does not exist (did you mean 'o-pro-3'?)",
        expect.stringMatching(/^catalog\/vendor-a\.yaml:L: model 'a-small-3\.5': sale_ends '2026-02-30' is not a calendar date/),
      ]),
    );
  });

  it('a successor that is written but fails the schema is its own problem, not a missing model', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-b.yaml', (t) => t.replace(/( {2}o-pro-3:\n(?: {4}.*\n)*? {4}max_output:) \d+/, '$1 -5'));
    const problems = problemsOf(tree);
    expect(problems).toEqual([expect.stringMatching(/^catalog\/vendor-b\.yaml:L: \/models\/o-pro-3\/max_output must be >= 1/)]);
  });

  it('every broken config file is named, and the catalog files are still checked against their schema', () => {
    tree = tempCatalogTree();
    tree.edit('config/limits.yaml', (t) => `${t}\nno_such_limit: 1\n`);
    tree.edit('config/billing.yaml', (t) => `${t}\nno_such_billing: 1\n`);
    tree.edit('catalog/vendor-e.yaml', (t) => t.replace(/context_window: \d+/, 'context_window: "big"'));
    const problems = problemsOf(tree);
    expect(problems).toHaveLength(3);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^config\/limits\.yaml:L: unknown field 'no_such_limit'/),
        expect.stringMatching(/^config\/billing\.yaml:L: unknown field 'no_such_billing'/),
        expect.stringMatching(/^catalog\/vendor-e\.yaml:L: \/models\/[^/]+\/context_window must be integer/),
      ]),
    );
  });
});

describe('`npx gateway catalog check` from any folder', () => {
  const gateway = (cwd: string, env: Record<string, string> = {}) => {
    const base = { ...process.env };
    delete base.GATEWAY_CATALOG_DIR;
    delete base.GATEWAY_CONFIG_DIR;
    return spawnSync(process.execPath, [join(process.cwd(), 'bin/gateway.mjs'), 'catalog', 'check'], {
      cwd,
      env: { ...base, ...env },
      encoding: 'utf8',
    });
  };

  it('in a subfolder of a project, checks that project', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-b.yaml', (t) => t.replace('successor: o-pro-3', 'successor: o-pro-9'));
    const run = gateway(join(tree.root, 'catalog'));
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`${tree.catalog}/vendor-b.yaml:`);
    expect(run.stderr).toContain("successor 'o-pro-9' does not exist");
  });

  it('outside any project, checks this installation’s own and says which', () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'gw-elsewhere-'));
    try {
      const run = gateway(elsewhere);
      expect(run.stderr).not.toMatch(/cannot read|ENOENT/);
      expect(run.stdout).toContain(`catalog and config are valid`);
      expect(run.stdout).toContain(`${process.cwd()}/catalog, ${process.cwd()}/config`);
      expect(run.status).toBe(0);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('a folder named by a variable that is not there is one sentence', () => {
    const run = gateway(process.cwd(), { GATEWAY_CONFIG_DIR: '/no/such/config' });
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(
      "catalog check: there is no config folder at /no/such/config: set GATEWAY_CONFIG_DIR to it, or unset it to check the project's own.",
    );
  });
});
