// `gateway catalog check [--strict]` and `gateway catalog diff <ref>`.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';
import { catalogFiles } from '../catalog/catalog.ts';
import { diffCatalogs, rawModels, renderDiffTable } from '../catalog/catalog-diff.ts';
import { formatWarning, type CatalogWarning } from '../catalog/model-warnings.ts';
import { loadSnapshot } from '../catalog/runtime.ts';
import { ConfigFileError } from '../catalog/yaml-file.ts';

export interface CatalogDirs {
  config: string;
  catalog: string;
}

export interface CheckOptions {
  /** Dates that have come (sale ends, scheduled prices) are problems, not warnings. */
  strict?: boolean;
  /** The instant dates are compared with. */
  now?: Date;
}

export interface CatalogReview {
  /** `file:line: reason`: the catalog would not start. */
  problems: string[];
  /** Likely mistakes that do not stop a start (none while there are problems: those come first). */
  warnings: CatalogWarning[];
}

export function reviewCatalog(dirs: CatalogDirs, opts: CheckOptions = {}): CatalogReview {
  let warnings: readonly CatalogWarning[];
  try {
    warnings = loadSnapshot(dirs, 1, opts.now).warnings;
  } catch (e) {
    if (e instanceof ConfigFileError) return { problems: e.problems, warnings: [] };
    return { problems: [(e as Error).message], warnings: [] };
  }
  const refused = opts.strict ? warnings.filter((w) => w.pastDate) : [];
  return {
    problems: refused.map((w) => `${w.at}: ${w.message}`),
    warnings: warnings.filter((w) => !refused.includes(w)),
  };
}

/** Problems as `file:line: reason`, empty when the catalog and config are sound. */
export function checkCatalog(dirs: CatalogDirs, opts: CheckOptions = {}): string[] {
  return reviewCatalog(dirs, opts).problems;
}

/** `gateway catalog …`: the exit code, or undefined when the arguments are no catalog command (the caller prints usage). */
export function runCatalogCommand(command: string | undefined, args: string[], dirs: CatalogDirs): number | undefined {
  if (command === 'check' && args.every((a) => a === '--strict')) {
    const { problems, warnings } = reviewCatalog(dirs, { strict: args.includes('--strict') });
    for (const p of problems) console.error(p);
    for (const w of warnings) console.error(formatWarning(w));
    if (problems.length === 0) console.log(`catalog and config are valid${warnings.length ? ` (${warnings.length} warning${warnings.length > 1 ? 's' : ''})` : ''}`);
    return problems.length ? 1 : 0;
  }
  if (command === 'diff' && args.length === 1) {
    process.stdout.write(diffAgainstRef(args[0], dirs.catalog));
    return 0;
  }
  return undefined;
}

/** The Markdown table of reviewed changes between a git ref and the working tree. */
export function diffAgainstRef(ref: string, catalogDir: string): string {
  const dir = resolve(catalogDir);
  const top = execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: dir, encoding: 'utf8' }).trim();
  const inRepo = relative(top, dir) || '.';
  const listed = execFileSync('git', ['ls-tree', '--name-only', `${ref}:${inRepo}`], { cwd: top, encoding: 'utf8' })
    .split('\n')
    .filter((n) => /\.ya?ml$/.test(n));
  const before = rawModels(
    listed.map((name) => ({
      name,
      text: execFileSync('git', ['show', `${ref}:${inRepo}/${name}`], { cwd: top, encoding: 'utf8' }),
    })),
  );
  const after = rawModels(catalogFiles(dir).map((f) => ({ name: basename(f), text: readFileSync(f, 'utf8') })));
  return renderDiffTable(diffCatalogs(before, after));
}
