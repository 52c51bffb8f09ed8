// `npx gateway reload` reaches a real running gateway: by the pid file `npm start` writes in its data folder
// (SIGHUP, whose result the gateway leaves beside it for the command to wait for), or over the admin API with
// --url and a token. Either way a refused reload exits 1 with the problems.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

const run = promisify(execFile);
let gw: ChildGateway;
beforeAll(async () => {
  gw = await startChildGateway({ GATEWAY_ADMIN_TOKEN: 'ops-admin-token' });
}, 60_000);
afterAll(() => gw?.remove());

async function cli(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'engine/cli/cli.ts', ...args], {
      env: { ...process.env, ...env },
    });
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, out: err.stdout + err.stderr };
  }
}

const priceOfD3 = async () => {
  const res = await fetch(`${gw.base}/v1/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } });
  return ((await res.json()) as any).data.find((m: any) => m.id === 'd-3').pricing.input_per_mtok;
};

describe('npx gateway reload', () => {
  it('npm start writes its own pid (only the pid) to GATEWAY_DATA_DIR/gateway.pid', () => {
    expect(readFileSync(join(gw.dataDir, 'gateway.pid'), 'utf8')).toBe(`${gw.child.pid}\n`);
  });

  it('signals the pid of the pid file: the gateway logs the SIGHUP and reloads', async () => {
    expect(await priceOfD3()).toBe(3);
    gw.tree.edit('catalog/vendor-d.yaml', (t) =>
      t.replace('pricing: { input: 3, output: 15, cache_read: 0.75 }', 'pricing: { input: 4, output: 15, cache_read: 0.75 }'),
    );
    const r = await cli(['reload'], { GATEWAY_DATA_DIR: gw.dataDir });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`pid ${gw.child.pid}`);
    expect(r.out).toMatch(/reloaded: catalog version 2: .*d-3/);
    await gw.waitFor(/SIGHUP received/, 10_000);
    await gw.waitFor(/catalog and config reloaded/, 10_000);
    expect(await priceOfD3()).toBe(4);
  }, 60_000);

  it('reloads over the admin API with --url and a token, and reports a refused reload', async () => {
    gw.tree.edit('catalog/vendor-d.yaml', (t) => t.replace('pricing: { input: 4,', 'pricing: { input: 5,'));
    const ok = await cli(['reload', '--url', gw.base, '--token', 'ops-admin-token'], {});
    expect(ok.code, ok.out).toBe(0);
    expect(ok.out).toMatch(/reloaded: catalog version/);
    expect(await priceOfD3()).toBe(5);
    gw.tree.edit('catalog/vendor-d.yaml', (t) => t.replace('pricing: { input: 5,', 'pricing: { inptu: 6,'));
    const refused = await cli(['reload', '--url', gw.base], { GATEWAY_ADMIN_TOKEN: 'ops-admin-token' });
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/reload refused[\s\S]*inptu/);
    expect(await priceOfD3()).toBe(5);
  }, 60_000);

  it('waits for the result of the SIGHUP: a refused reload exits 1 with each problem, and the catalog stays', async () => {
    // The reload over the admin API above was refused: the YAML still has the misspelt field.
    expect(gw.tree.read('catalog/vendor-d.yaml')).toContain('inptu: 6');
    gw.tree.edit('config/limits.yaml', (t) => `${t}\nno_such_limit: 1\n`);
    const refused = await cli(['reload'], { GATEWAY_DATA_DIR: gw.dataDir });
    expect(refused.code, refused.out).toBe(1);
    expect(refused.out).toMatch(/reload refused; the running catalog stays:\n/);
    expect(refused.out).toMatch(/vendor-d\.yaml:\d+: .*inptu/);
    expect(refused.out).toMatch(/limits\.yaml:\d+: .*no_such_limit/);
    expect(await priceOfD3()).toBe(5);
    // The next answer is its own, not the refusal left before it.
    gw.tree.edit('catalog/vendor-d.yaml', (t) => t.replace('pricing: { inptu: 6,', 'pricing: { input: 6,'));
    gw.tree.edit('config/limits.yaml', (t) => t.replace('\nno_such_limit: 1\n', ''));
    const ok = await cli(['reload'], { GATEWAY_DATA_DIR: gw.dataDir });
    expect(ok.code, ok.out).toBe(0);
    expect(ok.out).toMatch(/reloaded: catalog version \d+: .*d-3/);
    expect(await priceOfD3()).toBe(6);
  }, 60_000);

  it('says clearly when no gateway runs on that data folder', async () => {
    const r = await cli(['reload'], { GATEWAY_DATA_DIR: join(gw.dataDir, 'elsewhere') });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/No running gateway found: .*gateway\.pid does not exist/);
  });

  it('removes the pid file when it stops on SIGTERM', async () => {
    gw.child.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
    expect(existsSync(join(gw.dataDir, 'gateway.pid'))).toBe(false);
    const r = await cli(['reload'], { GATEWAY_DATA_DIR: gw.dataDir });
    expect(r.code).toBe(1);
  }, 30_000);
});
