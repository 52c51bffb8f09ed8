// Files the gateway ships beside its code (its migrations, package.json), found from wherever the running code
// sits: engine/db/ when it runs from the TypeScript sources, dist/ when it runs from the file `npm start` builds.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `relPath` (from the repository's root) in the first folder at or above the module at `moduleUrl` that has it. */
export function projectPath(moduleUrl: string, relPath: string): string {
  const start = dirname(fileURLToPath(moduleUrl));
  for (let dir = start; ; dir = dirname(dir)) {
    const candidate = join(dir, relPath);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`${relPath} was not found in ${start} or any folder above it`);
  }
}
