// Which catalog/ and config/ `gateway catalog check` reads: those of the nearest folder at or above the working one
// that has both, as git finds its repository, because that is what `npm start` would read from there.
// GATEWAY_CATALOG_DIR and GATEWAY_CONFIG_DIR, when set, are read as given.
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { projectPath } from '../core/project-path.ts';
import type { CatalogDirs } from './catalog-cli.ts';

type Env = Record<string, string | undefined>;

const isFolder = (path: string) => existsSync(path) && statSync(path).isDirectory();
const holdsBoth = (dir: string) => existsSync(join(dir, 'catalog', 'schema.json')) && isFolder(join(dir, 'config'));

/** A folder named by a variable that is not there: one sentence, rather than every file it would hold. */
export function missingFolder(dirs: CatalogDirs): string | undefined {
  for (const [name, dir] of [
    ['catalog', dirs.catalog],
    ['config', dirs.config],
  ] as const) {
    if (!isFolder(dir))
      return `catalog check: there is no ${name} folder at ${resolve(dir)}: set GATEWAY_${name.toUpperCase()}_DIR to it, or unset it to check the project's own.`;
  }
  return undefined;
}

export function catalogFolders(env: Env, cwd = process.cwd()): CatalogDirs {
  // catalog/schema.json, not catalog/: engine/catalog is the code that reads it.
  const root = nearestRoot(resolve(cwd)) ?? dirname(dirname(projectPath(import.meta.url, 'catalog/schema.json')));
  return {
    catalog: env.GATEWAY_CATALOG_DIR || join(root, 'catalog'),
    config: env.GATEWAY_CONFIG_DIR || join(root, 'config'),
  };
}

function nearestRoot(start: string): string | undefined {
  for (let dir = start; ; dir = dirname(dir)) {
    if (holdsBoth(dir)) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}
