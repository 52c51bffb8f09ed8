// `npx gateway wallet …` and `management-key create` while `npm start` runs on the embedded database: the
// commands go through the running gateway (found by the file it writes in its data folder), so what they
// write is what the gateway sees; when that gateway cannot be reached, they refuse and write nothing.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.ts';
import { waitForOutput } from '../helpers/process-output.ts';
import { tempCatalogTree } from '../helpers/temp-catalog.ts';

const tree = tempCatalogTree();
const dataDir = mkdtempSync(join(tmpdir(), 'gw-data-'));
const otherDir = mkdtempSync(join(tmpdir(), 'gw-held-'));
let child: ChildProcess | undefined;
afterAll(() => {
  child?.kill('SIGKILL');
  tree.remove();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(otherDir, { recursive: true, force: true });
});

const baseEnv = () => {
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    GATEWAY_CONFIG_DIR: tree.config,
    GATEWAY_CATALOG_DIR: tree.catalog,
  };
  delete env.DATABASE_URL;
  delete env.GATEWAY_ADMIN_TOKEN;
  return env;
};

function cli(args: string[], dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'engine/cli/cli.ts', ...args],
      { env: { ...baseEnv(), GATEWAY_DATA_DIR: dir } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const waitFor = waitForOutput;

describe('operator commands beside a running gateway on the embedded database', () => {
  it('go through the running gateway, which sees what they write', async () => {
    const port = await freePort();
    const out = { text: '' };
    child = spawn(process.execPath, ['--import', 'tsx', 'engine/main.ts'], {
      env: { ...baseEnv(), PORT: String(port), GATEWAY_DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (out.text += d));
    child.stderr!.on('data', (d) => (out.text += d));
    await waitFor(out, /API key:\s+sk-svc-\S+/, 45_000);
    const file = join(dataDir, 'gateway.json');
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const created = await cli(['wallet', 'create', '--credits', '5000'], dataDir);
    expect(created.code, created.stderr).toBe(0);
    const wallet = JSON.parse(created.stdout);
    expect(wallet.credits).toBe(5000);

    const topup = await cli(['wallet', 'topup', wallet.id, '--credits', '700', '--vendors', 'c'], dataDir);
    expect(topup.code, topup.stderr).toBe(0);
    const shown = await cli(['wallet', 'show', wallet.id], dataDir);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).lots).toHaveLength(2);

    const mk = await cli(['management-key', 'create', wallet.id, '--name', 'ops'], dataDir);
    expect(mk.code, mk.stderr).toBe(0);
    const { key } = JSON.parse(mk.stdout);
    // The running gateway knows the key the command made: its key doors accept it.
    const keys = await fetch(`http://127.0.0.1:${port}/v1/keys`, { headers: { authorization: `Bearer ${key}` } });
    expect(keys.status).toBe(200);

    // A dashboard sign-in link made through the running gateway signs the owner in there.
    const link = await cli(['wallet', 'sign-in-link', wallet.id], dataDir);
    expect(link.code, link.stderr).toBe(0);
    const { url } = JSON.parse(link.stdout);
    expect(url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/dashboard/sign-in\\?token=`));
    const signIn = await fetch(`http://127.0.0.1:${port}/dashboard/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${new URL(url).searchParams.get('token')}`,
      redirect: 'manual',
    });
    expect(signIn.status).toBe(303);

    const refused = await cli(['wallet', 'topup', wallet.id, '--credits', '0'], dataDir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/credits/);

    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
    expect(existsSync(file)).toBe(false);
  }, 90_000);

  it('refuse and write nothing when the gateway holding the database cannot be reached', async () => {
    mkdirSync(otherDir, { recursive: true });
    // A live process (this test) holds the folder, answering nowhere.
    writeFileSync(join(otherDir, 'gateway.json'), JSON.stringify({ url: 'http://127.0.0.1:9', pid: process.pid, admin_token: 'x' }), {
      mode: 0o600,
    });
    const before = readdirSync(otherDir);
    const res = await cli(['wallet', 'create', '--credits', '5'], otherDir);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/holds the embedded database.*Nothing was written/s);
    expect(res.stdout).toBe('');
    expect(readdirSync(otherDir)).toEqual(before);
  }, 30_000);

  it('refuse to create a new embedded database of their own', async () => {
    const missing = join(otherDir, 'nowhere');
    const res = await cli(['wallet', 'create'], missing);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/No gateway database/);
    expect(existsSync(missing)).toBe(false);
  }, 30_000);
});
