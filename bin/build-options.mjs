// How `npm start` builds the gateway into one file (bin/start.mjs), shared with the test that checks what the
// built file loads at start (test/ops/start-imports.test.ts).
import { join } from 'node:path';

/** esbuild options: one ESM file for Node 20, packages left in node_modules. */
export const gatewayBuildOptions = (root, outfile) => ({
  entryPoints: [join(root, 'engine', 'main.ts')],
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile,
  logLevel: 'warning',
});
