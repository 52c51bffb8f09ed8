import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { ConfigFileError } from '../../engine/catalog/yaml-file.ts';
import { checkCatalog } from '../../engine/cli/catalog-cli.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree;
afterEach(() => tree?.remove());

const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;

function problemsAfter(relPath: string, change: (t: string) => string): string[] {
  tree = tempCatalogTree();
  tree.edit(relPath, change);
  return checkCatalog(tree);
}

describe('catalog check', () => {
  it('accepts the shipped catalog and config', () => {
    expect(checkCatalog({ config: 'config', catalog: 'catalog' })).toEqual([]);
  });

  it('refuses a misspelt field with its file and line', () => {
    const problems = problemsAfter('catalog/vendor-a.yaml', (t) =>
      t.replace('pricing: { input: 5, output: 25,', 'pricing: { inptu: 5, output: 25,'),
    );
    const text = readFileSync(`${tree.catalog}/vendor-a.yaml`, 'utf8');
    expect(problems.join('\n')).toContain(`vendor-a.yaml:${lineOf(text, 'inptu')}: unknown field 'inptu'`);
  });

  it('refuses broken YAML with its line', () => {
    const problems = problemsAfter('catalog/vendor-c.yaml', (t) => t.replace(/^models:$/m, 'models:\n  bad: [unclosed'));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatch(/vendor-c\.yaml:\d+: /);
  });

  it('refuses a successor that does not exist', () => {
    const problems = problemsAfter('catalog/vendor-a.yaml', (t) => t.replace('successor: a-small-4.5', 'successor: a-small-9'));
    expect(problems.join('\n')).toMatch(/vendor-a\.yaml:\d+: model 'a-small-3\.5': successor 'a-small-9' does not exist/);
  });

  it('refuses a tier priced below its base', () => {
    const problems = problemsAfter('catalog/vendor-b.yaml', (t) =>
      t.replace(
        'tiers: [{ above_input_tokens: 272000, input: 60, output: 270 }]',
        'tiers: [{ above_input_tokens: 272000, input: 20, output: 270 }]',
      ),
    );
    expect(problems.join('\n')).toMatch(/vendor-b\.yaml:\d+: model 'b-pro-5\.\d': tier above 272000 is priced below the base price/);
  });

  it('refuses a model placed on a door that does not serve its kind', () => {
    const problems = problemsAfter('catalog/media.yaml', (t) =>
      t.replace(/(tts-1:\n(?:.*\n)*?\s+kind: speech\n)/, '$1    doors: [chat]\n'),
    );
    expect(problems.join('\n')).toMatch(/media\.yaml:\d+: model 'tts-1': door 'chat' does not serve speech models of vendor b/);
  });

  it('refuses a model placed on a door that config/doors.yaml does not define', () => {
    const problems = problemsAfter('catalog/media.yaml', (t) =>
      t.replace(/(tts-1:\n(?:.*\n)*?\s+kind: speech\n)/, '$1    doors: [speeches]\n'),
    );
    expect(problems.join('\n')).toMatch(/media\.yaml:\d+: model 'tts-1': door 'speeches' does not exist/);
  });

  it('refuses a video price for a resolution config/videos.yaml does not list', () => {
    const problems = problemsAfter('config/videos.yaml', (t) =>
      t.replace("resolutions: ['480p', '720p', '1080p']", "resolutions: ['480p', '720p']"),
    );
    expect(problems.join('\n')).toMatch(
      /media\.yaml:\d+: model 'video-d-\d': video_per_second names resolution '1080p', which config\/videos\.yaml does not list/,
    );
  });

  it('refuses a per-image reservation that is not the billing factor times the vendor charge', () => {
    const problems = problemsAfter('catalog/media.yaml', (t) =>
      t.replace('image_reservation: 0.09, image_charge: 0.06', 'image_reservation: 0.08, image_charge: 0.06'),
    );
    expect(problems.join('\n')).toMatch(/media\.yaml:\d+: model 'image-d-2': image_reservation 0\.08 is not 1\.5 × image_charge 0\.06/);
  });

  it('refuses a rule name that config/rules.yaml does not define', () => {
    const problems = problemsAfter('catalog/vendor-a.yaml', (t) =>
      t.replace('rules: [drop-sampling, lower-forced-tool-choice]', 'rules: [drop-sampling, lower-forced-toolchoice]'),
    );
    expect(problems.join('\n')).toContain("rule 'lower-forced-toolchoice' is not defined");
  });

  it('refuses a door name that config/doors.yaml does not define, wherever it is written', () => {
    let problems = problemsAfter('config/limits.yaml', (t) => t.replace('  speech: 120000', '  speeches: 120000'));
    const limits = readFileSync(`${tree.config}/limits.yaml`, 'utf8');
    expect(problems).toContain(
      `${tree.config}/limits.yaml:${lineOf(limits, 'speeches')}: call_timeout_ms names door 'speeches', which config/doors.yaml does not define`,
    );
    expect(problems).toContain(
      `${tree.config}/limits.yaml:${lineOf(limits, 'call_timeout_ms')}: call_timeout_ms has no entry for door 'speech'`,
    );
    tree.remove();

    problems = problemsAfter('config/rules.yaml', (t) => t.replace('doors: [images]', 'doors: [image]'));
    const rules = readFileSync(`${tree.config}/rules.yaml`, 'utf8');
    expect(problems).toContain(
      `${tree.config}/rules.yaml:${lineOf(rules, 'doors: [image]')}: rule 'never-send-size' names door 'image', which config/doors.yaml does not define`,
    );
    tree.remove();

    problems = problemsAfter('catalog/media.yaml', (t) => t.replace(/(tts-1:\n(?:.*\n)*?\s+kind: speech\n)/, '$1    doors: [speeches]\n'));
    const media = readFileSync(`${tree.catalog}/media.yaml`, 'utf8');
    expect(problems).toContain(
      `${tree.catalog}/media.yaml:${lineOf(media, 'doors: [speeches]')}: model 'tts-1': door 'speeches' does not exist`,
    );
  });

  it('takes a door or rule called constructor for an unknown name, not for a built-in', () => {
    const problems = problemsAfter('catalog/media.yaml', (t) =>
      t
        .replace(/(tts-1:\n(?:.*\n)*?\s+kind: speech\n)/, '$1    doors: [constructor]\n')
        .replace('rules: [never-send-size]', 'rules: [never-send-size, constructor]'),
    );
    expect(problems.join('\n')).toMatch(/media\.yaml:\d+: model 'tts-1': door 'constructor' does not exist/);
    expect(problems.join('\n')).toMatch(/media\.yaml:\d+: model 'image-d-1': rule 'constructor' is not defined in config\/rules\.yaml/);
  });

  it('refuses a default model the door does not serve', () => {
    const problems = problemsAfter('config/doors.yaml', (t) => t.replace('default_model: omni-moderation-latest', 'default_model: tts-1'));
    expect(problems.join('\n')).toMatch(/doors\.yaml:\d+: door 'moderations' defaults to 'tts-1', a model it does not serve/);
  });

  it('refuses a settlement need that names no transform', () => {
    const problems = problemsAfter('config/billing.yaml', (t) => t.replace('request: [count-characters]', 'request: [count-chars]'));
    const billing = readFileSync(`${tree.config}/billing.yaml`, 'utf8');
    expect(problems).toContain(
      `${tree.config}/billing.yaml:${lineOf(billing, 'count-chars')}: 'count-chars' is not a request step any format's chain runs (transforms/protocols/)`,
    );
  });

  it('refuses a config file that fails its schema, naming file and line', () => {
    tree = tempCatalogTree();
    tree.edit('config/limits.yaml', (t) => t.replace('default_max_tokens: 8192', 'default_max_tokens: lots'));
    expect(() => loadSnapshot(tree, 1)).toThrow(ConfigFileError);
    expect(checkCatalog(tree).join('\n')).toMatch(/limits\.yaml:\d+: \/default_max_tokens must be integer/);
  });

  it('`npx gateway catalog check` exits non-zero with file:line', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/vendor-d.yaml', (t) => t.replace(/context_window: (\d+)/, 'context_window: -$1'));
    const run = spawnSync(process.execPath, ['bin/gateway.mjs', 'catalog', 'check'], {
      env: { ...process.env, GATEWAY_CONFIG_DIR: tree.config, GATEWAY_CATALOG_DIR: tree.catalog },
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/vendor-d\.yaml:\d+: /);
    const ok = execFileSync(process.execPath, ['bin/gateway.mjs', 'catalog', 'check'], { encoding: 'utf8' });
    expect(ok).toContain('valid');
  });
});
