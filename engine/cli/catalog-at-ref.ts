// Reads the catalog folder and the config files a review needs, as they are in the working tree and as
// they were at a git ref. Anything that goes wrong becomes one sentence for the person who typed the
// command (git's own output says "fatal: ambiguous argument" and leaves them guessing).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { catalogFiles } from '../catalog/catalog.ts';

export class CatalogDiffError extends Error {
  constructor(sentence: string) {
    super(`catalog diff: ${sentence}`);
    this.name = 'CatalogDiffError';
  }
}

interface YamlText {
  name: string;
  text: string;
}

/** The catalog and the config files the review shows, on one side of the comparison. */
export interface ReviewedFiles {
  catalog: YamlText[];
  /** config/doors.yaml (which doors a model without `doors:` is on), when there is one. */
  doors?: string | undefined;
  /** config/rules.yaml, when there is one. */
  rules?: string | undefined;
}

interface ReviewSides {
  before: ReviewedFiles;
  after: ReviewedFiles;
}

/** The reviewed files at `ref` and in the working tree. */
export function readReviewSides(ref: string, dirs: { catalog: string; config: string }): ReviewSides {
  const catalogDir = resolve(dirs.catalog);
  if (!existsSync(catalogDir) || !statSync(catalogDir).isDirectory()) {
    const top = gitTop(process.cwd());
    const hint = top && existsSync(join(top, 'catalog')) ? ` run it from ${top}, the repository root,` : ' run it from the repository root';
    throw new CatalogDiffError(`there is no catalog folder at ${catalogDir}:${hint} or set GATEWAY_CATALOG_DIR.`);
  }
  const top = gitTop(catalogDir);
  if (!top) throw new CatalogDiffError(`${catalogDir} is not inside a git repository, so there is no '${ref}' to compare it with.`);
  const commit = resolveCommit(top, ref);
  const configDir = resolve(dirs.config);
  const inRepo = (dir: string) => {
    const rel = relative(top, existsSync(dir) ? realpathSync(dir) : dir);
    return rel.startsWith('..') || isAbsolute(rel) ? undefined : rel;
  };
  const catalogPath = inRepo(catalogDir)!;
  const configPath = inRepo(configDir);
  return {
    before: {
      catalog: yamlFilesAt(top, commit, catalogPath),
      doors: configPath === undefined ? undefined : fileAt(top, commit, join(configPath, 'doors.yaml')),
      rules: configPath === undefined ? undefined : fileAt(top, commit, join(configPath, 'rules.yaml')),
    },
    after: {
      catalog: catalogFiles(catalogDir).map((f) => ({ name: basename(f), text: readFileSync(f, 'utf8') })),
      doors: readIfThere(join(configDir, 'doors.yaml')),
      rules: readIfThere(join(configDir, 'rules.yaml')),
    },
  };
}

function git(cwd: string, args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new CatalogDiffError('git was not found on the PATH, and the diff reads the catalog of a git ref.');
    return undefined;
  }
}

const gitTop = (cwd: string) => git(cwd, ['rev-parse', '--show-toplevel'])?.trim() || undefined;

function resolveCommit(top: string, ref: string): string {
  // A ref beginning with '-' would be read by git as an option.
  const commit = ref.startsWith('-') ? undefined : git(top, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])?.trim();
  if (!commit) {
    throw new CatalogDiffError(
      `'${ref}' is not a branch, tag or commit of this repository (in a shallow CI checkout, fetch the history first, e.g. actions/checkout with fetch-depth: 0).`,
    );
  }
  return commit;
}

/** The YAML files of a folder at a commit; none when the folder did not exist then (every model is new). */
function yamlFilesAt(top: string, commit: string, dir: string): YamlText[] {
  const spec = dir === '' ? commit : `${commit}:${dir}`;
  const listed = git(top, ['ls-tree', '--name-only', spec]);
  if (listed === undefined) return [];
  return listed
    .split('\n')
    .filter((n) => /\.ya?ml$/.test(n))
    .sort()
    .map((name) => ({ name, text: fileAt(top, commit, join(dir, name)) ?? '' }));
}

const fileAt = (top: string, commit: string, path: string) => git(top, ['show', `${commit}:${path}`]);

const readIfThere = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : undefined);
