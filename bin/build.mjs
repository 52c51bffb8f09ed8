#!/usr/bin/env node
// Builds the gateway and its command line into dist/ (one JavaScript file each, packages left in node_modules).
// `npm ci` runs it once (the `prepare` script); `npm start` and `npx gateway` run what it built, and build again
// only when one of the files a build read has changed since, so an edit never runs stale code and an unchanged
// tree starts without loading esbuild at all. Each build records its inputs (esbuild's metafile) with their size
// and modification time beside the output.
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOptions } from './build-options.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** What dist/ holds: the gateway (`npm start`) and the command line (`npx gateway`). */
const ENTRIES = { gateway: 'engine/main.ts', cli: 'engine/cli/cli.ts' };

const outfileOf = (name) => join(root, 'dist', `${name}.mjs`);
const inputsOf = (name) => join(root, 'dist', `${name}.inputs.json`);
const fingerprint = (path) => {
  const s = statSync(join(root, path), { throwIfNoEntry: false });
  return s ? `${s.size}:${s.mtimeMs}` : 'missing';
};

/** True when dist/<name>.mjs was built from the files as they are now. */
function current(name) {
  let recorded;
  try {
    recorded = JSON.parse(readFileSync(inputsOf(name), 'utf8'));
    statSync(outfileOf(name));
  } catch {
    return false;
  }
  return Object.entries(recorded).every(([path, print]) => fingerprint(path) === print);
}

/** Builds dist/<name>.mjs; written beside and renamed into place, so processes starting at once never read half a file. */
async function build(name) {
  const { build: esbuild, stop } = await import('esbuild');
  const tmp = (path) => path.replace(/([^/]+)$/, `.$1-${process.pid}`);
  const result = await esbuild({ ...buildOptions(root, ENTRIES[name], tmp(outfileOf(name))), metafile: true });
  const inputs = Object.fromEntries(
    [...Object.keys(result.metafile.inputs), 'bin/build-options.mjs'].map((path) => [path, fingerprint(path)]),
  );
  writeFileSync(tmp(inputsOf(name)), JSON.stringify(inputs));
  renameSync(tmp(outfileOf(name)), outfileOf(name));
  renameSync(tmp(inputsOf(name)), inputsOf(name));
  stop(); // esbuild's service process is not needed once built
}

/** The path of dist/<name>.mjs, built first if a source changed since it was. */
export async function built(name) {
  if (current(name)) return outfileOf(name);
  try {
    await build(name);
  } catch (e) {
    throw new Error(`dist/${name}.mjs is older than the sources and could not be built again (run \`npm run build\`): ${e.message}`);
  }
  return outfileOf(name);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const name of Object.keys(ENTRIES)) await build(name);
}
