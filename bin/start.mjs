#!/usr/bin/env node
// `npm start`: runs the gateway built into dist/ (bin/build.mjs; `npm ci` builds it) in this process, so signals
// reach the gateway itself. A built file keeps the transpiler and its source maps out of the gateway's memory
// (about 65 MB of the process at rest when it ran from the sources through tsx).
import { pathToFileURL } from 'node:url';
import { built } from './build.mjs';

await import(pathToFileURL(await built('gateway')).href);
