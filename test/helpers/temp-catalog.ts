// Copies catalog/ and config/ to a temporary folder so a test can edit them freely.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TempTree {
  root: string;
  config: string;
  catalog: string;
  edit(relPath: string, change: (text: string) => string): void;
  read(relPath: string): string;
  remove(): void;
}

export function tempCatalogTree(): TempTree {
  const root = mkdtempSync(join(tmpdir(), 'gw-catalog-'));
  cpSync('catalog', join(root, 'catalog'), { recursive: true });
  cpSync('config', join(root, 'config'), { recursive: true });
  return {
    root,
    config: join(root, 'config'),
    catalog: join(root, 'catalog'),
    edit(relPath, change) {
      const file = join(root, relPath);
      const before = readFileSync(file, 'utf8');
      const after = change(before);
      if (after === before) throw new Error(`edit of ${relPath} changed nothing`);
      writeFileSync(file, after);
    },
    read: (relPath) => readFileSync(join(root, relPath), 'utf8'),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** The catalog text with model `id`'s `retired: true` line taken out, as it stood before its sale ended. */
export function unretired(text: string, id: string): string {
  const marked = new RegExp(`( {2}${id.replace(/\./g, '\\.')}:\\n(?: {4}.*\\n)*?) {4}retired: true.*\\n`);
  const after = text.replace(marked, '$1');
  if (after === text) throw new Error(`model ${id} is not marked retired`);
  return after;
}
