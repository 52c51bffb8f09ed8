// A new embedded data folder is created (initdb) in a child process, because WebAssembly memory never shrinks and
// initdb is the most PGlite ever asks for; the child's memory goes when it exits (docs/decisions/embedded-database.md).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** How PGlite itself tells a folder it can open from one it must run initdb in. */
const isInitialised = (dir: string): boolean => existsSync(join(dir, 'PG_VERSION'));

// Run by the child: argv[1] is PGlite's module file (resolved here, so the child finds the gateway's copy
// whatever its working folder), argv[2] the folder, argv[3] a setting written into it before the gateway's
// first open, so its first start already runs with it.
const CHILD_SOURCE = `
const [, pglitePath, dir, sharedBuffers] = process.argv;
(async () => {
  const { PGlite } = require(pglitePath);
  const pgl = await PGlite.create(dir);
  await pgl.exec("ALTER SYSTEM SET shared_buffers = '" + sharedBuffers + "'");
  await pgl.close();
})().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
`;

/**
 * Writes a new data folder at `dir` in a child process (nothing to do when it is already one). Two gateways
 * starting at once on one new folder are not supported, as with PGlite itself.
 */
export async function initialiseApart(dir: string, sharedBuffers: string, timeoutMs = 120_000): Promise<void> {
  if (isInitialised(dir)) return;
  const pglitePath = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ['-e', CHILD_SOURCE, pglitePath, dir, sharedBuffers],
      { timeout: timeoutMs, maxBuffer: 1024 * 1024 },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        reject(new Error(`the embedded database could not be created in ${dir}: ${(stderr || err.message).trim().slice(-2000)}`));
      },
    );
  });
  if (!isInitialised(dir)) throw new Error(`the embedded database could not be created in ${dir}: no PG_VERSION after initdb`);
}
