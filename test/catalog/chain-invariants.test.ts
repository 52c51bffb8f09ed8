// A door chain that could serve calls it cannot bill is refused the same way everywhere: by
// `npx gateway catalog check` (a real process, exit 1, file:line), by a reload (the running snapshot stays)
// and at start. A door names a format in config/doors.yaml and the format's folder declares the chain: a broken
// name is a YAML edit, a broken chain a code edit (made here in memory), each placed on the door's line.
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { ConfigFileError } from '../../engine/catalog/yaml-file.ts';
import { protocols } from '../../transforms/protocols/index.ts';
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

/** Edits of config/doors.yaml alone: a door names a format, so what it may break is which one. */
const CASES: BrokenChain[] = [
  {
    name: 'a door naming a wire format no folder declares',
    change: (t) => t.replace('d: images-with-count,', 'd: imagez,'),
    after: 'path: /v1/images/generations',
    needle: 'd: imagez',
    reason: /door 'images' protocol 'imagez': 'imagez' is not a wire format \(transforms\/protocols\/index\.ts\)/,
  },
  {
    name: 'a door naming a format that declares no chain for it',
    change: (t) => t.replace("vendor_protocol: { '*': speech }", "vendor_protocol: { '*': embeddings }"),
    after: 'path: /v1/audio/speech',
    needle: 'vendor_protocol',
    reason: /door 'speech' protocol 'embeddings': the format declares no chain for door 'speech'/,
  },
  {
    name: 'a door serving a vendor whose output billing.yaml caps through a chain that does not cap it',
    change: (t) => t.replace("vendor_protocol: { a: messages, '*': chat-completions }", "vendor_protocol: { '*': messages }"),
    after: 'path: /v1/chat/completions',
    needle: 'vendor_protocol',
    reason:
      /door 'chat' protocol 'messages' serves vendor e but its chain does not run 'cap-output': config\/billing\.yaml reservation\.output_cap_written lists the vendor/,
  },
];

/** A format's chain (transforms/protocols/<format>/) with its request steps but `drop`, for as long as `run` takes. */
function withoutStep(format: string, door: string, drop: string, run: () => void): void {
  const wire = protocols[format]!;
  const chain = wire.chains[door]!;
  protocols[format] = { ...wire, chains: { ...wire.chains, [door]: { ...chain, request: chain.request.filter((s) => s.name !== drop) } } };
  try {
    run();
  } finally {
    protocols[format] = wire;
  }
}

interface BrokenStep {
  name: string;
  format: string;
  door: string;
  drop: string;
  /** The door's `vendor_protocol` line is where the problem is placed. */
  after: string;
  reason: RegExp;
}

/** A format folder's chain missing a step: refused at load, placed on the door's line naming the format. */
const STEP_CASES: BrokenStep[] = [
  {
    name: 'a character-billed door without its counting step',
    format: 'speech',
    door: 'speech',
    drop: 'count-characters',
    after: 'path: /v1/audio/speech',
    reason: /door 'speech' protocol 'speech': its chain must run 'count-characters': the door bills by characters/,
  },
  {
    name: 'a streaming chat-completions chain that does not ask for stream usage',
    format: 'chat-completions',
    door: 'chat',
    drop: 'ask-stream-usage',
    after: 'path: /v1/chat/completions',
    reason:
      /door 'chat' protocol 'chat-completions': its chain reaches 'chat-completions' but does not run 'ask-stream-usage': the vendor reports usage in a stream only when the request asks for it/,
  },
  {
    name: 'a responses chain that does not cap server tools',
    format: 'responses',
    door: 'responses',
    drop: 'cap-server-tools',
    after: 'path: /v1/responses',
    reason:
      /door 'responses' protocol 'responses': its chain reaches 'responses' but does not run 'cap-server-tools': the vendor runs server tools as often as it decides/,
  },
  {
    name: "a door's rewrite that would not apply on a chain serving its vendor",
    format: 'messages',
    door: 'messages',
    drop: 'model-rules',
    after: 'path: /v1/messages',
    reason:
      /door 'messages' protocol 'messages': its chain does not run 'model-rules', so rule 'rewrite of service_tier' would not apply to a-/,
  },
  {
    name: 'a model rule that would not apply on a door serving the model',
    format: 'images-with-count',
    door: 'images',
    drop: 'model-rules',
    after: 'path: /v1/images/generations',
    reason:
      /door 'images' protocol 'images-with-count': its chain does not run 'model-rules', so rule 'never-send-size' would not apply to image-d-1 \(.*media\.yaml:\d+\)/,
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

  for (const c of STEP_CASES) {
    it(`${c.name}: a reload refuses it on the door's vendor_protocol line, a start too`, () => {
      tree = tempCatalogTree();
      const runtime = new Runtime(tree);
      const before = runtime.snapshot();
      const line = lineAfter(tree.read('config/doors.yaml'), c.after, 'vendor_protocol');
      const where = new RegExp(`config/doors\\.yaml:${line}: ${c.reason.source}`);
      withoutStep(c.format, c.door, c.drop, () => {
        const reload = runtime.reload();
        expect(reload.ok).toBe(false);
        expect(reload.problems.join('\n')).toMatch(where);
        expect(runtime.snapshot()).toBe(before);
        expect(() => new Runtime(tree!)).toThrow(ConfigFileError);
      });
      expect(runtime.reload().ok).toBe(true);
    });
  }

  it('the shipped chains pass, and a reload of an unchanged tree swaps in a new snapshot', () => {
    tree = tempCatalogTree();
    const runtime = new Runtime(tree);
    const reload = runtime.reload();
    expect(reload).toMatchObject({ ok: true, version: 2, problems: [] });
  });
});
