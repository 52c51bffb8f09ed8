// `npx gateway catalog diff <ref>` shows everything a reviewer must see: a new model's whole card, what a
// removed one was, rule, effort, data-handling and door changes, every price with its unit and percentage,
// tiers and scheduled prices matched by threshold and date, changes to config/rules.yaml. A wrong ref or
// a run from the wrong folder gives one sentence.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { diffCatalogs, diffRules, doorsServingIn, rawModels, rawRules } from '../../engine/catalog/catalog-diff.ts';
import { renderDiffTable } from '../../engine/catalog/diff-table.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree | undefined;
const scratch: string[] = [];
afterEach(() => {
  tree?.remove();
  tree = undefined;
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const DOORS = `chat: { serves: { kinds: [text], vendors: [a, b] } }
messages: { serves: { kinds: [text], vendors: [a] } }
speech: { serves: { kinds: [speech], vendors: [b] } }
`;
const catalog = (text: string) => rawModels([{ name: 'x.yaml', text }], doorsServingIn(DOORS));
const table = (before: string, after: string) =>
  renderDiffTable(diffCatalogs(catalog(before), catalog(after)))
    .trim()
    .split('\n')
    .slice(2);

const TEXT_MODEL = `vendor: a
models:
  m1:
    kind: text
    context_window: 200000
    max_output: 32000
    pricing: { input: 2, output: 8, cache_read: 0.2, tiers: [{ above_input_tokens: 200000, input: 4, output: 12 }], scheduled: [{ from: "2027-01-01", input: 3, output: 9 }] }
    effort_levels: [low, high]
    rules: [drop-sampling]
    sale_ends: null
    successor: null
    data_handling: { region: United States, deletes_request_after_answer: true, cache_retention: 30 days }
    source: assumed
`;

describe('catalog diff: whole cards', () => {
  it("prints a new model's whole card: kind, doors, context, every price with its unit, tiers, scheduled prices, effort, rules, data handling", () => {
    expect(
      table(
        'models:\n  other: { vendor: b, kind: speech, pricing: { per_mchar: 15 }, source: spec }\n',
        `${TEXT_MODEL}  other: { vendor: b, kind: speech, pricing: { per_mchar: 15 }, source: spec }\n`,
      ),
    ).toEqual([
      '| m1 | (model) | — | added |  | new model |',
      '| m1 | vendor | — | a |  |  |',
      '| m1 | kind | — | text |  |  |',
      '| m1 | doors | — | chat, messages |  |  |',
      '| m1 | context_window | — | 200000 | tokens |  |',
      '| m1 | max_output | — | 32000 | tokens |  |',
      '| m1 | pricing.input | — | 2 | USD per 1M tokens |  |',
      '| m1 | pricing.output | — | 8 | USD per 1M tokens |  |',
      '| m1 | pricing.cache_read | — | 0.2 | USD per 1M tokens |  |',
      '| m1 | tier above 200000 input | — | 4 | USD per 1M tokens |  |',
      '| m1 | tier above 200000 output | — | 12 | USD per 1M tokens |  |',
      '| m1 | scheduled from 2027-01-01 input | — | 3 | USD per 1M tokens |  |',
      '| m1 | scheduled from 2027-01-01 output | — | 9 | USD per 1M tokens |  |',
      '| m1 | effort_levels | — | low, high |  |  |',
      '| m1 | rules | — | drop-sampling |  |  |',
      '| m1 | data_handling.region | — | United States |  |  |',
      '| m1 | data_handling.deletes_request_after_answer | — | true |  |  |',
      '| m1 | data_handling.cache_retention | — | 30 days |  |  |',
      '| m1 | source | — | assumed |  |  |',
    ]);
  });

  it('prints what a removed model was', () => {
    expect(
      table(
        'models:\n  tts: { vendor: b, kind: speech, pricing: { per_mchar: 15 }, source: spec }\n  keep: { vendor: b, kind: speech, pricing: { per_mchar: 1 }, source: spec }\n',
        'models:\n  keep: { vendor: b, kind: speech, pricing: { per_mchar: 1 }, source: spec }\n',
      ),
    ).toEqual([
      '| tts | (model) | present | — |  | removed |',
      '| tts | vendor | b | — |  |  |',
      '| tts | kind | speech | — |  |  |',
      '| tts | doors | speech | — |  |  |',
      '| tts | pricing.per_mchar | 15 | — | USD per 1M characters |  |',
      '| tts | effort_levels | not accepted | — |  |  |',
      '| tts | rules | none | — |  |  |',
      '| tts | source | spec | — |  |  |',
    ]);
  });
});

describe('catalog diff: every field is a row', () => {
  it('rules, effort levels, data handling and doors', () => {
    const after = TEXT_MODEL.replace('rules: [drop-sampling]', 'rules: [drop-sampling, lower-forced-tool-choice]')
      .replace('effort_levels: [low, high]', 'effort_levels: null')
      .replace('cache_retention: 30 days', 'cache_retention: undisclosed')
      .replace('    kind: text\n', '    kind: text\n    doors: [messages]\n');
    expect(table(TEXT_MODEL, after)).toEqual([
      '| m1 | doors | chat, messages | messages |  | removed chat |',
      '| m1 | effort_levels | low, high | not accepted |  | removed low, high |',
      '| m1 | rules | drop-sampling | drop-sampling, lower-forced-tool-choice |  | added lower-forced-tool-choice |',
      '| m1 | data_handling.cache_retention | 30 days | undisclosed |  |  |',
    ]);
  });

  it('a door config/doors.yaml adds to a kind and vendor moves every model without a doors line', () => {
    const before = rawModels([{ name: 'x.yaml', text: TEXT_MODEL }], doorsServingIn(DOORS));
    const after = rawModels(
      [{ name: 'x.yaml', text: TEXT_MODEL }],
      doorsServingIn(`${DOORS}responses: { serves: { kinds: [text], vendors: [a] } }\n`),
    );
    expect(renderDiffTable(diffCatalogs(before, after))).toContain(
      '| m1 | doors | chat, messages | chat, messages, responses |  | added responses |',
    );
  });

  it('matches tiers by threshold and scheduled prices by date, with the unit and percentage of each price', () => {
    const after = TEXT_MODEL.replace(
      'tiers: [{ above_input_tokens: 200000, input: 4, output: 12 }]',
      'tiers: [{ above_input_tokens: 100000, input: 3, output: 10 }, { above_input_tokens: 200000, input: 5, output: 12 }]',
    ).replace('scheduled: [{ from: "2027-01-01", input: 3, output: 9 }]', 'scheduled: [{ from: "2027-01-01", input: 3, output: 9.9 }]');
    expect(table(TEXT_MODEL, after)).toEqual([
      '| m1 | tier above 100000 input | — | 3 | USD per 1M tokens | new price |',
      '| m1 | tier above 100000 output | — | 10 | USD per 1M tokens | new price |',
      '| m1 | tier above 200000 input | 4 | 5 | USD per 1M tokens | +25% |',
      '| m1 | scheduled from 2027-01-01 output | 9 | 9.9 | USD per 1M tokens | +10% |',
    ]);
  });

  it('gives per-image, per-second and per-character prices their unit and percentage', () => {
    const before =
      'models:\n  i: { vendor: b, kind: image, pricing: { image_reservation: 0.1 }, source: spec }\n  v: { vendor: b, kind: video, pricing: { video_per_second: { 720p: 0.2 } }, source: spec }\n  s: { vendor: b, kind: speech, pricing: { per_mchar: 15 }, source: spec }\n';
    const after = before
      .replace('image_reservation: 0.1', 'image_reservation: 0.12')
      .replace('720p: 0.2', '720p: 0.15')
      .replace('per_mchar: 15', 'per_mchar: 30');
    expect(table(before, after)).toEqual([
      '| i | pricing.image_reservation | 0.1 | 0.12 | USD per image | +20% |',
      '| s | pricing.per_mchar | 15 | 30 | USD per 1M characters | +100% |',
      '| v | pricing.video_per_second.720p | 0.2 | 0.15 | USD per second | -25% |',
    ]);
  });

  it('shows changes to the rules of config/rules.yaml, and keeps a | inside a message from splitting the table', () => {
    const before = rawRules('drop-sampling:\n  doors: [chat]\n  drops: [temperature]\n  why: old\n');
    const after = rawRules('drop-sampling:\n  doors: [chat]\n  drops: [temperature, top_p]\n  why: "a | b"\nnew-rule:\n  drops: [size]\n');
    expect(renderDiffTable(diffRules(before, after)).trim().split('\n').slice(2)).toEqual([
      '| rule drop-sampling | drops | temperature | temperature, top_p |  | added top_p |',
      '| rule drop-sampling | why | old | a \\| b |  |  |',
      '| rule new-rule | (rule) | — | added |  | new rule |',
      '| rule new-rule | drops | — | size |  |  |',
    ]);
  });
});

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
const gateway = (cwd: string, env: Record<string, string>, ...args: string[]) =>
  spawnSync(process.execPath, [`${process.cwd()}/bin/gateway.mjs`, 'catalog', 'diff', ...args], {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });

function committedTree(): TempTree {
  const t = tempCatalogTree();
  git(t.root, 'init', '-q');
  git(t.root, 'add', '.');
  git(t.root, 'commit', '-qm', 'base');
  return t;
}

describe('npx gateway catalog diff', () => {
  it("shows a commit that only changes a model's rules and a rule of config/rules.yaml", () => {
    tree = committedTree();
    tree.edit('catalog/vendor-b.yaml', (t) => t.replace(/(b-pro-5\.2:[\s\S]*?rules: )\[vendor-refuses-temperature\]/, '$1[]'));
    tree.edit('config/rules.yaml', (t) => t.replace('drops: [size]', 'drops: [size, quality]'));
    const run = gateway(tree.root, { GATEWAY_CATALOG_DIR: tree.catalog, GATEWAY_CONFIG_DIR: tree.config }, 'HEAD');
    expect(run.status).toBe(0);
    expect(run.stdout.trim().split('\n').slice(2)).toEqual([
      '| b-pro-5.2 | rules | vendor-refuses-temperature | none |  | removed vendor-refuses-temperature |',
      '| rule never-send-size | drops | size | size, quality |  | added quality |',
    ]);
  });

  it('says in one sentence that a ref is unknown', () => {
    tree = committedTree();
    const run = gateway(tree.root, { GATEWAY_CATALOG_DIR: tree.catalog, GATEWAY_CONFIG_DIR: tree.config }, 'no-such-branch');
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toEqual([
      "catalog diff: 'no-such-branch' is not a branch, tag or commit of this repository (in a shallow CI checkout, fetch the history first, e.g. actions/checkout with fetch-depth: 0).",
    ]);
    // Not an option for git either.
    const option = gateway(tree.root, { GATEWAY_CATALOG_DIR: tree.catalog, GATEWAY_CONFIG_DIR: tree.config }, '--output=x');
    expect(option.status).toBe(1);
    expect(option.stderr).toMatch(/^catalog diff: '--output=x' is not a branch, tag or commit/);
  });

  it('says in one sentence where to run it from, when run from a subfolder', () => {
    tree = committedTree();
    const env = { ...process.env };
    delete env.GATEWAY_CATALOG_DIR;
    delete env.GATEWAY_CONFIG_DIR;
    const run = spawnSync(process.execPath, [`${process.cwd()}/bin/gateway.mjs`, 'catalog', 'diff', 'HEAD'], {
      cwd: tree.catalog,
      env,
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^catalog diff: there is no catalog folder at .*\/catalog\/catalog: run it from .+, the repository root, or set GATEWAY_CATALOG_DIR\.$/,
    );
  });

  it('says in one sentence that the folder is not in a git repository', () => {
    tree = tempCatalogTree();
    const run = gateway(
      tree.root,
      { GATEWAY_CATALOG_DIR: tree.catalog, GATEWAY_CONFIG_DIR: tree.config, GIT_CEILING_DIRECTORIES: tree.root },
      'HEAD',
    );
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(
      `catalog diff: ${tree.catalog} is not inside a git repository, so there is no 'HEAD' to compare it with.`,
    );
  });

  it('names the file and line of YAML it cannot read', () => {
    tree = committedTree();
    tree.edit('catalog/vendor-e.yaml', (t) => `${t}  broken: [unclosed\n`);
    const run = gateway(tree.root, { GATEWAY_CATALOG_DIR: tree.catalog, GATEWAY_CONFIG_DIR: tree.config }, 'HEAD');
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toMatch(
      /^catalog diff: in the working tree, vendor-e\.yaml is not valid YAML: .* at line \d+, column \d+\.$/,
    );
  });

  it('shows no change when config/ lies outside the repository and the catalog did not change', () => {
    tree = committedTree();
    const outside = tempCatalogTree();
    try {
      const run = gateway(tree.root, { GATEWAY_CATALOG_DIR: tree.catalog, GATEWAY_CONFIG_DIR: outside.config }, 'HEAD');
      expect(run.status).toBe(0);
      expect(run.stdout).toBe('No price, rule, door or other model changes.\n');
    } finally {
      outside.remove();
    }
  });

  it('takes a catalog folder the ref did not have for an empty catalog: every model is new', () => {
    const root = mkdtempSync(join(tmpdir(), 'gw-diff-'));
    scratch.push(root);
    git(root, 'init', '-q');
    git(root, 'commit', '-q', '--allow-empty', '-m', 'empty');
    mkdirSync(join(root, 'catalog'));
    tree = tempCatalogTree();
    const run = gateway(root, { GATEWAY_CATALOG_DIR: join(root, 'catalog'), GATEWAY_CONFIG_DIR: tree.config }, 'HEAD');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^No price/);
    execFileSync('cp', [join(tree.catalog, 'vendor-e.yaml'), join(root, 'catalog')]);
    const added = gateway(root, { GATEWAY_CATALOG_DIR: join(root, 'catalog'), GATEWAY_CONFIG_DIR: tree.config }, 'HEAD');
    expect(added.stdout).toMatch(/\| e-\S+ \| \(model\) \| — \| added \| {2}\| new model \|/);
  });
});
