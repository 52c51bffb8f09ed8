// Likely mistakes that never stop a start or a reload: a sale end or scheduled price whose date has come
// (an error only with `catalog check --strict`), a price outside the sane range. `catalog check` and the
// start print them; each points at the line of its field.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatWarning } from '../../engine/catalog/model-warnings.ts';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { checkCatalog, reviewCatalog } from '../../engine/cli/catalog-cli.ts';
import { freePort } from '../helpers/free-port.ts';
import { type TempTree, tempCatalogTree, unretired } from '../helpers/temp-catalog.ts';

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

const shipped = { config: 'config', catalog: 'catalog' };
const warningsAt = (now: string, dirs = shipped) => reviewCatalog(dirs, { now: new Date(now) }).warnings.map(formatWarning);

describe('catalog check: dates that have come', () => {
  it('warns of a sale end from 00:00 KST of its day, on the sale_ends line, and refuses it only with --strict', () => {
    // The shipped catalog marks these three retired; unmarked, they are what an operator saw on 2026-12-01.
    const ending = [
      ['catalog/media.yaml', 'image-b-4', 'image-b-3'],
      ['catalog/media.yaml', 'image-b-6', 'image-b-3'],
      ['catalog/vendor-a.yaml', 'a-small-3.5', 'a-small-4.5'],
    ];
    tree = tempCatalogTree();
    for (const [file, id] of ending) tree.edit(file!, (t) => unretired(t, id!));
    expect(warningsAt('2026-11-30T14:59:59Z', tree)).toEqual([]);
    const warnings = warningsAt('2026-11-30T15:00:00Z', tree);
    expect(warnings).toEqual(
      ending.map(
        ([file, id, successor]) =>
          `${join(tree.root, file!)}:${lineIn(tree.read(file!), id!, 'sale_ends:')}: warning: model '${id}': sale_ends 2026-12-01 has come: the model is no longer sold (mark it \`retired: true\` to keep pointing its callers to '${successor}' without this warning, or remove it once they have moved)`,
      ),
    );
    expect(checkCatalog(tree, { now: new Date('2026-11-30T15:00:00Z') })).toEqual([]);
    const strict = reviewCatalog(tree, { now: new Date('2026-11-30T15:00:00Z'), strict: true });
    expect(strict.warnings).toEqual([]);
    expect(strict.problems).toEqual(warnings.map((w) => w.replace(': warning: ', ': ')));
    expect(warningsAt('2026-11-30T15:00:00Z')).toEqual([]);
  });

  it('warns of a scheduled price in force, on its line', () => {
    const warnings = warningsAt('2027-01-01T00:00:00+09:00').filter((w) => w.includes('scheduled'));
    const vendorC = 'catalog/vendor-c.yaml';
    const text = readFileSync(vendorC, 'utf8');
    expect(warnings).toEqual(
      ['c-flash-3', 'c-flash-2.5', 'c-flash-lite-2.5'].map(
        (id) =>
          `${vendorC}:${lineIn(text, id, 'scheduled:')}: warning: model '${id}': the scheduled price from 2027-01-01 is in force: make it the base input and output price and remove the entry`,
      ),
    );
    expect(warningsAt('2026-12-31T23:59:59+09:00').filter((w) => w.includes('scheduled'))).toEqual([]);
  });

  it('neither a start nor a reload refuses a catalog whose sale end has come; the snapshot carries the warning', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-a.yaml', (t) => unretired(t, 'a-small-3.5').replace('sale_ends: "2026-12-01"', 'sale_ends: "2020-01-01"'));
    const runtime = new Runtime(tree);
    const line = lineIn(tree.read('catalog/vendor-a.yaml'), 'a-small-3.5', 'sale_ends:');
    const expected = `${tree.catalog}/vendor-a.yaml:${line}: warning: model 'a-small-3.5': sale_ends 2020-01-01 has come`;
    expect(runtime.snapshot().warnings.map(formatWarning).join('\n')).toContain(expected);
    const reload = runtime.reload();
    expect(reload).toMatchObject({ ok: true, problems: [] });
    expect(runtime.snapshot().warnings.map(formatWarning).join('\n')).toContain(expected);
  });

  it('`npx gateway catalog check` exits 0 with the warning, `--strict` exits 1 with it as a problem', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-a.yaml', (t) => unretired(t, 'a-small-3.5').replace('sale_ends: "2026-12-01"', 'sale_ends: "2020-01-01"'));
    const line = lineIn(tree.read('catalog/vendor-a.yaml'), 'a-small-3.5', 'sale_ends:');
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['bin/gateway.mjs', 'catalog', 'check', ...args], {
        env: { ...process.env, GATEWAY_CONFIG_DIR: tree.config, GATEWAY_CATALOG_DIR: tree.catalog },
        encoding: 'utf8',
      });
    const lenient = run();
    expect(lenient.status).toBe(0);
    expect(lenient.stdout).toMatch(/catalog and config are valid \(\d+ warnings?\)/);
    expect(lenient.stderr).toContain(`vendor-a.yaml:${line}: warning: model 'a-small-3.5': sale_ends 2020-01-01 has come`);
    const strict = run('--strict');
    expect(strict.status).toBe(1);
    expect(strict.stderr).toContain(`vendor-a.yaml:${line}: model 'a-small-3.5': sale_ends 2020-01-01 has come`);
    expect(strict.stdout).toBe('');
  });
});

describe('catalog check: prices outside the sane range', () => {
  const before = '2026-01-01T00:00:00Z';
  function warningsAfter(relPath: string, change: (t: string) => string): { warnings: string[]; text: string } {
    tree = tempCatalogTree();
    tree.edit(relPath, change);
    expect(checkCatalog(tree, { now: new Date(before), strict: true })).toEqual([]);
    return { warnings: warningsAt(before, tree), text: tree.read(relPath) };
  }

  it('the shipped catalog has none', () => {
    expect(warningsAt(before)).toEqual([]);
  });

  it("warns of a token price above $1,000 per 1M tokens, a tier's included", () => {
    const { warnings, text } = warningsAfter('catalog/vendor-b.yaml', (t) =>
      t
        .replace('pricing: { input: 21, output: 168 }', 'pricing: { input: 21, output: 1680 }')
        .replace(
          'tiers: [{ above_input_tokens: 272000, input: 60, output: 270 }]',
          'tiers: [{ above_input_tokens: 272000, input: 60, output: 2700 }]',
        ),
    );
    expect(warnings).toContain(
      `${tree.catalog}/vendor-b.yaml:${lineIn(text, 'b-pro-5.2', 'output: 1680')}: warning: model 'b-pro-5.2': pricing.output is $1680 per 1M tokens, above the sane $1000: check the figure and its unit`,
    );
    expect(warnings.join('\n')).toMatch(
      /vendor-b\.yaml:\d+: warning: model 'b-pro-5\.\d': tier above 272000 output is \$2700 per 1M tokens, above the sane \$1000/,
    );
    expect(warnings).toHaveLength(2);
  });

  it('warns of a per-image price out of range, by its own unit', () => {
    const { warnings, text } = warningsAfter('catalog/media.yaml', (t) =>
      t.replace('pricing: { input: 2, output: 8, image_reservation: 0.075 }', 'pricing: { input: 2, output: 8, image_reservation: 75 }'),
    );
    expect(warnings).toEqual([
      `${tree.catalog}/media.yaml:${lineIn(text, 'image-b-6', 'image_reservation: 75')}: warning: model 'image-b-6': pricing.image_reservation is $75 per image, above the sane $10: check the figure and its unit`,
    ]);
  });

  it('warns of a text model whose output is free while its input is not', () => {
    const { warnings, text } = warningsAfter('catalog/vendor-a.yaml', (t) =>
      t.replace('pricing: { input: 5, output: 25,', 'pricing: { input: 5, output: 0,'),
    );
    expect(warnings).toEqual([
      `${tree.catalog}/vendor-a.yaml:${lineIn(text, 'a-top-5.5', 'output: 0')}: warning: model 'a-top-5.5': pricing.output is $0 per 1M tokens while input costs $5: every answer would be free`,
    ]);
  });
});

describe('npm start', () => {
  it('prints the catalog warnings', async () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-a.yaml', (t) => unretired(t, 'a-small-3.5').replace('sale_ends: "2026-12-01"', 'sale_ends: "2020-01-01"'));
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-data-'));
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'engine/main.ts'], {
      env: {
        ...process.env,
        PORT: String(port),
        GATEWAY_DATA_DIR: dataDir,
        GATEWAY_CONFIG_DIR: tree.config,
        GATEWAY_CATALOG_DIR: tree.catalog,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    try {
      await new Promise<void>((resolve, reject) => {
        const started = Date.now();
        const tick = () => {
          if (/warning: model 'a-small-3\.5': sale_ends 2020-01-01 has come/.test(out)) return resolve();
          if (Date.now() - started > 60_000) return reject(new Error(`no warning printed; output:\n${out}`));
          setTimeout(tick, 100);
        };
        tick();
      });
      expect(out).toMatch(/the catalog has \d+ warning\(s\)/);
      // The shipped models whose sale ended are marked retired: the start no longer speaks of them.
      expect(out).not.toMatch(/model '(image-b-[456]|o-pro-1)'/);
    } finally {
      child.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
