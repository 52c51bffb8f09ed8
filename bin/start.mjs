#!/usr/bin/env node
// `npm start`: builds the gateway's TypeScript into one JavaScript file (esbuild, under a second; packages stay
// in node_modules), then runs it in this process, so signals reach the gateway itself. The built file keeps the
// transpiler and its source maps out of the gateway's memory (about 65 MB of the process at rest when it ran
// from the sources through tsx). Each start builds from the sources it finds, so an edit never runs stale code.
import { renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, stop } from 'esbuild';
import { gatewayBuildOptions } from './build-options.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'dist', 'gateway.mjs');
// Built beside and renamed into place: processes starting at once never import a half-written file.
const building = join(root, 'dist', `.gateway-${process.pid}.mjs`);
await build(gatewayBuildOptions(root, building));
renameSync(building, outfile);
stop(); // esbuild's own service process is not needed while the gateway runs
await import(pathToFileURL(outfile).href);
