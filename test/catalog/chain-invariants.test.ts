// A door chain that could serve calls it cannot bill is refused the same way everywhere: by
// `npx gateway catalog check` (a real process, exit 1, file:line), by a reload (the running snapshot stays)
// and at start.
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { ConfigFileError } from '../../engine/catalog/yaml-file.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree | undefined;
afterEach(() => tree?.remove());

/** The 1-based line of the first line containing `needle` after the first line containing `after`. */
function lineAfter(text: string, after: string, needle: string): number {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.includes(after));
  const found = lines.findIndex((l, i) => i > start && l.includes(needle));
  if (start < 0 || found < 0) throw new Error(`'${needle}' after '${after}' not found`);
  return found + 1;
}

interface BrokenChain {
  name: string;
  change: (doorsYaml: string) => string;
  /** Where the offending line is: after this text, the first line with `needle`. */
  after: string;
  needle: string;
  reason: RegExp;
}

const CASES: BrokenChain[] = [
  {
    name: 'a chain naming an unknown transform',
    change: (t) => t.replace('        - carry-cache-control', '        - carry-cache-contrl'),
    after: 'chat:',
    needle: 'carry-cache-contrl',
    reason: /door 'chat' protocol 'messages': request step 'carry-cache-contrl' is not a request transform/,
  },
  {
    name: 'a chain to a wire format no file declares',
    change: (t) => t.replace('      speaks: images', '      speaks: imagez'),
    after: 'images-with-count:',
    needle: 'speaks: imagez',
    reason: /door 'images' protocol 'images-with-count': 'imagez' is not a wire format \(transforms\/protocols\/index\.ts\)/,
  },
  {
    name: 'a character-billed door without its counting step',
    change: (t) => t.replace('request: [count-characters]', 'request: []'),
    after: 'upstream: /v1/audio/speech',
    needle: 'request:',
    reason: /door 'speech' protocol 'speech' must run 'count-characters': the door bills by characters/,
  },
  {
    name: 'a streaming chat-completions chain that does not ask for stream usage',
    change: (t) => t.replace('request: [model-rules, ask-stream-usage, cap-output]', 'request: [model-rules, cap-output]'),
    after: 'upstream: /v1/chat/completions',
    needle: 'request:',
    reason:
      /door 'chat' protocol 'chat-completions' reaches 'chat-completions' but does not run 'ask-stream-usage': the vendor reports usage in a stream only when the request asks for it/,
  },
  {
    name: 'a chain serving a vendor whose output billing.yaml caps, without the step that caps it',
    change: (t) => t.replace('request: [model-rules, ask-stream-usage, cap-output]', 'request: [model-rules, ask-stream-usage]'),
    after: 'upstream: /v1/chat/completions',
    needle: 'request:',
    reason:
      /door 'chat' protocol 'chat-completions' serves vendor e but does not run 'cap-output': config\/billing\.yaml reservation\.output_cap_written lists the vendor/,
  },
  {
    name: 'a responses chain that does not cap server tools',
    change: (t) => t.replace(/(upstream: \/v1\/responses\n\s+request: )\[cap-server-tools\]/, '$1[]'),
    after: 'upstream: /v1/responses',
    needle: 'request:',
    reason:
      /door 'responses' protocol 'responses' reaches 'responses' but does not run 'cap-server-tools': the vendor runs server tools as often as it decides/,
  },
  {
    name: 'a model rule that would not apply on a door serving the model',
    change: (t) => t.replace('request: [model-rules, stated-image-count]', 'request: [stated-image-count]'),
    after: 'images-with-count:',
    needle: 'request:',
    reason:
      /door 'images' protocol 'images-with-count' does not run 'model-rules', so rule 'never-send-size' would not apply to image-d-1 \(.*media\.yaml:\d+\)/,
  },
];

describe('door chains that could not be billed', () => {
  for (const c of CASES) {
    it(`${c.name}: catalog check exits 1 with file:line, a reload refuses it, a start too`, () => {
      tree = tempCatalogTree();
      const runtime = new Runtime(tree);
      const before = runtime.snapshot();

      tree.edit('config/doors.yaml', c.change);
      const line = lineAfter(tree.read('config/doors.yaml'), c.after, c.needle);
      const where = new RegExp(`config/doors\\.yaml:${line}: ${c.reason.source}`);

      const run = spawnSync(process.execPath, ['bin/gateway.mjs', 'catalog', 'check'], {
        env: { ...process.env, GATEWAY_CONFIG_DIR: tree.config, GATEWAY_CATALOG_DIR: tree.catalog },
        encoding: 'utf8',
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(where);

      const reload = runtime.reload();
      expect(reload.ok).toBe(false);
      expect(reload.problems.join('\n')).toMatch(where);
      expect(runtime.snapshot()).toBe(before);

      expect(() => new Runtime(tree!)).toThrow(ConfigFileError);
    });
  }

  it('the shipped chains pass, and a reload of an unchanged tree swaps in a new snapshot', () => {
    tree = tempCatalogTree();
    const runtime = new Runtime(tree);
    const reload = runtime.reload();
    expect(reload).toMatchObject({ ok: true, version: 2, problems: [] });
  });
});
