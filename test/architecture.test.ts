// The house rules of docs/architecture.md, checked on the real tree: rooms import only the rooms below
// them, no file imports test/ from outside it, no wire format's folder imports another's, no import circle, no
// engine file over 400 lines, no WeakMap keyed by something made per call, no format's image or prompt fields in
// the engine's readers of the formats' declarations.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { protocols } from '../transforms/protocols/index.ts';

const ROOT = join(import.meta.dirname, '..');

/** Each room and the rooms it may import (besides itself). Mirrors the table in docs/architecture.md. */
const MAY_IMPORT: Record<string, string[]> = {
  'engine/core': [],
  'engine/db': ['engine/core'],
  'engine/audit': ['engine/core', 'engine/db'],
  'engine/identity': ['engine/core', 'engine/db', 'engine/audit'],
  transforms: ['engine/core'],
  'engine/catalog': ['engine/core', 'transforms'],
  'engine/http': ['engine/core', 'engine/catalog'],
  'engine/keys': ['engine/core', 'engine/db', 'engine/http', 'engine/audit'],
  'engine/money': ['engine/core', 'engine/db', 'engine/catalog', 'engine/keys', 'engine/audit'],
  'engine/usage': ['engine/core', 'engine/db', 'engine/catalog', 'engine/http', 'engine/keys', 'engine/money', 'engine/audit'],
  'engine/telemetry': ['engine/core'],
  'engine/calls': ['engine/core', 'engine/catalog', 'engine/http', 'engine/money', 'engine/usage', 'engine/telemetry', 'transforms'],
  'engine/videos': [
    'engine/core',
    'engine/db',
    'engine/catalog',
    'engine/http',
    'engine/money',
    'engine/usage',
    'engine/calls',
    'engine/telemetry',
  ],
  'engine/alerts': ['engine/core', 'engine/db', 'engine/http', 'engine/keys', 'engine/audit'],
  'engine/admin': ['engine/core', 'engine/db', 'engine/catalog', 'engine/http', 'engine/keys', 'engine/money', 'engine/audit'],
  'engine/openapi': ['engine/core', 'engine/catalog', 'engine/http', 'engine/keys', 'engine/audit'],
  'engine/observe': ['engine/core', 'engine/db', 'engine/catalog', 'engine/http', 'engine/money'],
  'engine/dashboard': [
    'engine/core',
    'engine/db',
    'engine/catalog',
    'engine/http',
    'engine/keys',
    'engine/money',
    'engine/usage',
    'engine/admin',
    'engine/videos',
    'engine/audit',
    'engine/identity',
    'engine/alerts',
  ],
  'engine/process': ['engine/core', 'engine/calls'],
  'engine/cli': [
    'engine/core',
    'engine/db',
    'engine/catalog',
    'engine/keys',
    'engine/money',
    'engine/admin',
    'engine/calls',
    'engine/dashboard',
    'engine/audit',
    'transforms',
  ],
  simulator: [],
  engine: ['*'], // the top level of engine/ (main.ts, gateway.ts and its *-wiring.ts files) wires the rooms together
  bench: ['*'],
  bin: [],
};
const PRODUCT_FOLDERS = ['engine', 'transforms', 'simulator', 'bench', 'bin'];

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    // Installed packages are no one's code here (bench/peer installs the peer gateway into its own folder).
    if (name === 'node_modules') continue;
    const rel = join(dir, name);
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...sourceFiles(rel));
    else if (/\.(ts|mjs)$/.test(name)) out.push(rel);
  }
  return out;
}

/** Relative imports of a file, resolved to repository paths (static, dynamic and type-only alike). */
function importsOf(file: string): string[] {
  const src = readFileSync(join(ROOT, file), 'utf8');
  const specs = [...src.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]);
  return specs.map((s) => normalize(join(dirname(file), s!)));
}

function roomOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'engine' && parts.length > 2) return `engine/${parts[1]}`;
  return parts[0]!;
}

const files = PRODUCT_FOLDERS.flatMap(sourceFiles);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

describe('the house', () => {
  it('nothing outside test/ imports from test/', () => {
    const offenders = [...graph].flatMap(([f, deps]) => deps.filter((d) => d.startsWith('test/')).map((d) => `${f} → ${d}`));
    expect(offenders).toEqual([]);
  });

  it('every room imports only the rooms docs/architecture.md allows', () => {
    const offenders: string[] = [];
    for (const [file, deps] of graph) {
      const room = roomOf(file);
      const allowed = MAY_IMPORT[room];
      if (!allowed) {
        offenders.push(`${file}: room ${room} is not in the table`);
        continue;
      }
      for (const dep of deps) {
        const target = roomOf(dep);
        if (target === room || allowed.includes('*') || allowed.includes(target)) continue;
        offenders.push(`${file} (${room}) → ${dep} (${target})`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('keeps each wire format in its own folder: no format folder imports another (shared code is steps/ or util/)', () => {
    const formatOf = (f: string) => /^transforms\/protocols\/([^/]+)\//.exec(f)?.[1];
    const offenders = [...graph].flatMap(([f, deps]) => {
      const own = formatOf(f);
      return own ? deps.filter((d) => formatOf(d) !== undefined && formatOf(d) !== own).map((d) => `${f} → ${d}`) : [];
    });
    expect(offenders).toEqual([]);
  });

  it('has no import circle between files', () => {
    const state = new Map<string, 'open' | 'done'>();
    const circles: string[] = [];
    const visit = (f: string, path: string[]) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        circles.push([...path.slice(path.indexOf(f)), f].join(' → '));
        return;
      }
      state.set(f, 'open');
      for (const d of graph.get(f) ?? []) if (graph.has(d)) visit(d, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of graph.keys()) visit(f, []);
    expect(circles).toEqual([]);
  });

  it('keeps every engine file at 400 lines or fewer (generated files aside: their schema is what a reader reads)', () => {
    const long = files
      .filter((f) => f.startsWith('engine/') && !readFileSync(join(ROOT, f), 'utf8').startsWith('// Generated from'))
      .map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length }))
      .filter((x) => x.lines > 400)
      .map((x) => `${x.f}: ${x.lines}`);
    expect(long).toEqual([]);
  });

  // Issue 38: a loop whose condition sets no bound must end by its body (a retry's attempts, a caller's signal); three
  // at most in the money and the call path, so a new one is a decision, not a habit.
  it('has at most three loops without a bound in their condition in engine/money and engine/calls', () => {
    const unbounded = files
      .filter((f) => f.startsWith('engine/money/') || f.startsWith('engine/calls/'))
      .flatMap((f) => {
        const loops = readFileSync(join(ROOT, f), 'utf8').match(/for\s*\([^;()]*;\s*;|while\s*\(\s*true\s*\)/g) ?? [];
        return loops.map(() => f);
      });
    expect(unbounded.length, unbounded.join(', ')).toBeLessThanOrEqual(3);
    expect(unbounded.length).toBeGreaterThan(0); // the pattern still finds the ones known today
  });

  // A long-lived WeakMap keyed by something made per call keeps every entry alive through young collections
  // (engine/http/request-slots.ts): per-request state goes on the request, a caller's context in the caller.
  it('keys no WeakMap by a request, a reply or a caller', () => {
    const keyed = files.filter(
      (f) => f.startsWith('engine/') && /new WeakMap<\s*(FastifyRequest|FastifyReply|Caller)\b/.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    expect(keyed).toEqual([]);
  });

  // The tests mirror the rooms (docs/architecture.md): test/<room>/ for one room's code; the other folders are
  // kinds of test that cross the rooms, or what the tests share.
  it('keeps each test in the folder of its room, or of its kind', () => {
    const rooms = readdirSync(join(ROOT, 'engine')).filter((n) => statSync(join(ROOT, 'engine', n)).isDirectory());
    const beside = ['transforms', 'simulator', 'bench'];
    const kinds = ['e2e', 'chaos', 'attack', 'hardening', 'ops', 'helpers', 'fixtures', 'types'];
    const strays = readdirSync(join(ROOT, 'test')).filter((n) =>
      statSync(join(ROOT, 'test', n)).isDirectory()
        ? ![...rooms, ...beside, ...kinds].includes(n) && n !== 'artifacts'
        : !/^architecture(-[a-z]+)?\.test\.ts$/.test(n),
    );
    expect(strays).toEqual([]);
  });

  // A test moved or renamed leaves no comment or page naming its old path.
  it('names only test files that exist, in the code and the docs', () => {
    const texts = [
      ...files,
      ...sourceFiles('test'),
      'README.md',
      ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
        .filter((n) => n.endsWith('.md'))
        .map((n) => `docs/${n}`),
    ];
    for (const room of readdirSync(join(ROOT, 'engine'))) {
      if (statSync(join(ROOT, 'engine', room)).isDirectory() && readdirSync(join(ROOT, 'engine', room)).includes('README.md'))
        texts.push(`engine/${room}/README.md`);
    }
    texts.push('bench/README.md', 'simulator/README.md');
    const missing = texts.flatMap((f) =>
      [...readFileSync(join(ROOT, f), 'utf8').matchAll(/\btest\/[\w./-]+\.(?:ts|mjs)\b/g)]
        .map((m) => m[0])
        .filter((p) => !statSync(join(ROOT, p), { throwIfNoEntry: false })?.isFile())
        .map((p) => `${f} → ${p}`),
    );
    expect(missing).toEqual([]);
  });

  // Where each format's image parts and prompt sit, and what in it pulls content in, is the format's own declaration
  // (Protocol `images`, `prompt`); the engine's readers of them name none of them, so a format is added or changed in
  // its folder alone.
  it("names no format's image or prompt fields in the engine files that read the formats' declarations", () => {
    const readers = [
      'engine/core/image-parts.ts',
      'engine/core/prompt-fields.ts',
      'engine/catalog/body-measure.ts',
      'engine/catalog/text-bounds.ts',
      'engine/calls/context-window.ts',
    ];
    // Every name a declaration holds (a path's parts too), but the words of the declarations' own shape.
    const shape = new Set(['string', 'given', 'items', 'one_of', 'none_of', 'type', 'type_prefix', 'when']);
    const quoted = (declaration: object) => JSON.stringify(declaration).match(/"[^"]+"/g) ?? [];
    const declared = Object.values(protocols)
      .flatMap((p) => [...quoted(p.images ?? {}), ...quoted(p.prompt ?? {})])
      .flatMap((q) => q.slice(1, -1).split('.'));
    const fields = [
      'messages',
      'input',
      'system',
      'instructions',
      'image_url',
      'input_image',
      'mcp_servers',
      'previous_response_id',
      'conversation',
    ];
    const names = new Set([...fields, 'document', 'input_file', 'item_reference', 'web_fetch', ...declared].filter((n) => !shape.has(n)));
    const found = readers.flatMap((f) => {
      const src = readFileSync(join(ROOT, f), 'utf8').replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, '');
      const literals = [...src.matchAll(/(['"`])([\w./-]+)\1/g)].map((m) => m[2]!).filter((l) => names.has(l));
      const accessed = [...src.matchAll(/\.(\w+)\b/g)].map((m) => m[1]!).filter((n) => fields.includes(n));
      return [...literals, ...accessed].map((n) => `${f}: ${n}`);
    });
    expect(found).toEqual([]);
  });

  it('resolves every relative import to a file that exists', () => {
    const missing = [...graph].flatMap(([f, deps]) =>
      deps
        .filter((d) => {
          try {
            return !statSync(join(ROOT, d)).isFile();
          } catch {
            return true;
          }
        })
        .map((d) => `${f} → ${relative('.', d)}`),
    );
    expect(missing).toEqual([]);
  });
});
