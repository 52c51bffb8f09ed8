// `npm start` as an operator runs it: a real process on the embedded database and the simulator.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.ts';
import { waitForOutput } from '../helpers/process-output.ts';
import { tempCatalogTree } from '../helpers/temp-catalog.ts';

const tree = tempCatalogTree();
const dataDir = mkdtempSync(join(tmpdir(), 'gw-data-'));
let child: ChildProcess | undefined;
afterAll(() => {
  child?.kill('SIGKILL');
  tree.remove();
  rmSync(dataDir, { recursive: true, force: true });
});

const waitFor = waitForOutput;

describe('npm start', () => {
  it('serves on the embedded default with the simulator, reloads on SIGHUP, stops on SIGTERM', async () => {
    const port = await freePort();
    const out = { text: '' };
    child = spawn(process.execPath, ['bin/start.mjs'], {
      env: {
        ...process.env,
        PORT: String(port),
        GATEWAY_DATA_DIR: dataDir,
        GATEWAY_CONFIG_DIR: tree.config,
        GATEWAY_CATALOG_DIR: tree.catalog,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (out.text += d));
    child.stderr!.on('data', (d) => (out.text += d));
    const [, apiKey] = await waitFor(out, /API key:\s+(sk-svc-\S+)/, 45_000);
    expect(out.text).toContain('served by the bundled simulator');
    expect(out.text).toMatch(/management key:\s+sk-svcm-/);
    const base = `http://127.0.0.1:${port}`;
    const models = async () =>
      ((await (await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as any).data;
    const priceOf = async (id: string) => (await models()).find((m: any) => m.id === id).pricing.input_per_mtok;
    expect(await priceOf('d-3')).toBe(3);
    // Run from the file npm start builds: the files shipped beside the code are found (migrations ran, the version is read).
    const described = (await (await fetch(`${base}/openapi.json`)).json()) as { info: { version: string } };
    expect(described.info.version).toBe(JSON.parse(readFileSync('package.json', 'utf8')).version);

    tree.edit('catalog/vendor-d.yaml', (t) =>
      t.replace('pricing: { input: 3, output: 15, cache_read: 0.75 }', 'pricing: { input: 4, output: 15, cache_read: 0.75 }'),
    );
    child.kill('SIGHUP');
    await waitFor(out, /catalog and config reloaded/, 10_000);
    expect(await priceOf('d-3')).toBe(4);

    tree.edit('catalog/vendor-d.yaml', (t) => t.replace('pricing: { input: 4,', 'pricing: { inptu: 5,'));
    child.kill('SIGHUP');
    await waitFor(out, /reload refused/, 10_000);
    expect(out.text).toMatch(/vendor-d\.yaml:\d+: unknown field 'inptu'/);
    expect(await priceOf('d-3')).toBe(4);

    const exited = new Promise<number | null>((r) => child!.on('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out.text.split(apiKey!).length - 1).toBe(1); // printed once, in the banner, never logged
  }, 90_000);
});
