// What the gateway `npm start` builds loads at start. Packages only some gateways need are loaded at their first
// use: the tokenizer tables only estimates read (about 60 MB), the S3 SDK only a bucket store uses (about 24 MB),
// the OpenTelemetry SDK only when traces are exported. A static import of one of them anywhere in the engine
// would put it in every process's memory at start, unseen until the bench's RSS row.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { expect, it } from 'vitest';
import { buildOptions } from '../../bin/build-options.mjs';

const ON_DEMAND = [/^gpt-tokenizer/, /^@aws-sdk\//, /^@opentelemetry\/(sdk-|exporter-|resources|core)/];

it('the built gateway imports the tokenizer, the S3 SDK and the trace exporter only when first used', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-build-'));
  try {
    const outfile = join(dir, 'gateway.mjs');
    const metafile = (await build({ ...buildOptions(process.cwd(), 'engine/main.ts', outfile), metafile: true, write: true })).metafile!;
    const imports = metafile.outputs[Object.keys(metafile.outputs).find((o) => o.endsWith('gateway.mjs'))!]!.imports;
    const atStart = imports.filter((i) => i.external && i.kind === 'import-statement').map((i) => i.path);
    const later = imports.filter((i) => i.external && i.kind !== 'import-statement').map((i) => i.path);
    expect(atStart.filter((p) => ON_DEMAND.some((r) => r.test(p)))).toEqual([]);
    // They are still reached, at first use: the check above would pass on a build that left them out. (The
    // tokenizer is required at run time, out of the bundler's sight; the estimate tests count with it.)
    expect(later).toEqual(expect.arrayContaining(['@aws-sdk/client-s3', '@opentelemetry/sdk-trace-base']));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
