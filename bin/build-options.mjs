// How the gateway and its command line are built into dist/ (bin/build.mjs), shared with the test that checks what
// the built gateway loads at start (test/ops/start-imports.test.ts).
import { join } from 'node:path';

/** esbuild options: `entry` (a path under root) as one ESM file for Node 20, packages left in node_modules. */
export const buildOptions = (root, entry, outfile) => ({
  entryPoints: [join(root, entry)],
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile,
  logLevel: 'warning',
});
