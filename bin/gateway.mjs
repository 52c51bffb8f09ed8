#!/usr/bin/env node
// `npx gateway …`: the command line built into dist/ (bin/build.mjs), run in this process.
import { pathToFileURL } from 'node:url';
import { built } from './build.mjs';

await import(pathToFileURL(await built('cli')).href);
