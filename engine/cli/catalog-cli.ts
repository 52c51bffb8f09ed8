// `gateway catalog check` and `gateway catalog diff <ref>`.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, relative, resolve } from 'node:path';
import { catalogFiles } from '../catalog/catalog.ts';
import { diffCatalogs, rawModels, renderDiffTable } from '../catalog/catalog-diff.ts';
import { loadSnapshot } from '../catalog/runtime.ts';
import { ConfigFileError } from '../catalog/yaml-file.ts';

export interface CatalogDirs {
  config: string;
  catalog: string;
}

/** Problems as `file:line: reason`, empty when the catalog and config are sound. */
export function checkCatalog(dirs: CatalogDirs): string[] {
  try {
    const snap = loadSnapshot(dirs, 1);
    void snap;
    return [];
  } catch (e) {
    if (e instanceof ConfigFileError) return e.problems;
    return [(e as Error).message];
  }
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
