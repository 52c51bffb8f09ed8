#!/usr/bin/env node
// `npx gateway …` runs the TypeScript CLI through tsx, so there is no build step.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const result = spawnSync(
  process.execPath,
  ['--import', import.meta.resolve('tsx'), join(root, 'engine', 'cli', 'cli.ts'), ...process.argv.slice(2)],
  {
    cwd: process.cwd(),
    stdio: 'inherit',
  },
);
process.exit(result.status ?? 1);
