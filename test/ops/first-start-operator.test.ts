// A new operator's first minutes, on real `npm start` processes: the embedded database's first-run banner names
// the development wallet and the dashboard's sign-in command; a first start on an empty PostgreSQL says how to
// make a wallet and a key, and `npx gateway key create` makes one; without GATEWAY_ADMIN_TOKEN the admin routes
// answer 404 to everyone but this start's own credential (operations.md: "Unset: the admin routes answer 404").
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string>): Promise<Run> {
  const base: Record<string, string> = { ...(process.env as Record<string, string>) };
  delete base.DATABASE_URL;
  delete base.GATEWAY_ADMIN_TOKEN;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'engine/cli/cli.ts', ...args], { env: { ...base, ...env } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const started: ChildGateway[] = [];
let pg: TestPostgres | undefined;
afterAll(async () => {
  started.forEach((g) => g.remove());
  await pg?.cleanup();
});

/** Whether an API key is taken by the gateway's model doors. */
const keyWorks = async (base: string, key: string) =>
  (await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).status === 200;

describe('first start on the embedded database, no GATEWAY_ADMIN_TOKEN', () => {
  let gw: ChildGateway;
  beforeAll(async () => {
    gw = await startChildGateway({ GATEWAY_ADMIN_TOKEN: '' });
    started.push(gw);
  }, 90_000);

  it('names the development wallet and the dashboard sign-in command, which works as printed', async () => {
    const walletId = (await gw.waitFor(/created the development wallet (\S+) with 10,000,000 credits \(₩14,000 · \$10\.00\)/))[1]!;
    const command = (await gw.waitFor(/dashboard:\s+npx gateway (wallet sign-in-link \S+)/))[1]!;
    expect(command).toBe(`wallet sign-in-link ${walletId}`);
    const link = await cli(command.split(' '), { GATEWAY_DATA_DIR: gw.dataDir });
    expect(link.code, link.stderr).toBe(0);
    expect(JSON.parse(link.stdout)).toMatchObject({
      wallet_id: walletId,
      url: expect.stringContaining(`${gw.base}/dashboard/sign-in?token=`),
    });
  }, 90_000);

  it('answers 404 on every admin route, as for a path nothing serves, unless this start’s own credential comes', async () => {
    const nothing = await fetch(`${gw.base}/admin/v1/no-such-route`);
    expect(nothing.status).toBe(404);
    const { admin_token } = JSON.parse(readFileSync(join(gw.dataDir, 'gateway.json'), 'utf8')) as { admin_token: string };
    const asks: [string, string][] = [
      ['GET', '/admin/v1/wallets'],
      ['POST', '/admin/v1/wallets'],
      ['POST', '/admin/v1/wallets/w/sign-in-link'],
      ['POST', '/admin/v1/wallets/w/keys'],
    ];
    for (const [method, path] of asks) {
      for (const authorization of [undefined, 'Bearer wrong-token', `Bearer ${admin_token}x`]) {
        const res = await fetch(`${gw.base}${path}`, { method, headers: authorization ? { authorization } : {} });
        expect(res.status, `${method} ${path} with ${authorization}`).toBe(404);
        expect(((await res.json()) as { error: { message: string } }).error.message).toBe(`No door at ${method} ${path}.`);
      }
    }
    const own = await fetch(`${gw.base}/admin/v1/wallets`, { headers: { authorization: `Bearer ${admin_token}` } });
    expect(own.status).toBe(200);
  }, 30_000);

  it('`npx gateway key create <wallet-id>` makes an API key through the running gateway, printed once', async () => {
    const walletId = (await gw.waitFor(/created the development wallet (\S+) with/))[1]!;
    const made = await cli(['key', 'create', walletId, '--name', 'lab'], { GATEWAY_DATA_DIR: gw.dataDir });
    expect(made.code, made.stderr).toBe(0);
    const record = JSON.parse(made.stdout) as { key: string; name: string };
    expect(record.name).toBe('lab');
    expect(record.key).toMatch(/^sk-svc-/);
    expect(await keyWorks(gw.base, record.key)).toBe(true);
    const unknown = await cli(['key', 'create', 'no-such-wallet'], { GATEWAY_DATA_DIR: gw.dataDir });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No wallet 'no-such-wallet'/);
  }, 30_000);
});

describe.runIf(postgresAvailability.ok || REQUIRE_POSTGRES)('first start on an empty PostgreSQL', () => {
  it('says how to make a wallet and a key; the commands it prints make a key the gateway takes', async () => {
    pg = await openTestPostgres({ migrate: false });
    const env = { DATABASE_URL: pg.url };
    const gw = await startChildGateway({ ...env, GATEWAY_ADMIN_TOKEN: '' }, { apiKey: 'none yet' });
    started.push(gw);
    await gw.waitFor(/npx gateway wallet sign-in-link <wallet-id>/);
    expect(gw.out.text).toMatch(/no wallet yet\. Make one with credits, then an API key for it/);
    const create = /npx gateway (wallet create --credits \d+)/.exec(gw.out.text)![1]!;
    expect(gw.out.text).toContain('npx gateway key create <wallet-id>');
    expect(gw.out.text).not.toMatch(/development wallet/);

    const wallet = await cli(create.split(' '), env);
    expect(wallet.code, wallet.stderr).toBe(0);
    const walletId = (JSON.parse(wallet.stdout) as { id: string }).id;
    const made = await cli(['key', 'create', walletId], env);
    expect(made.code, made.stderr).toBe(0);
    expect(await keyWorks(gw.base, (JSON.parse(made.stdout) as { key: string }).key)).toBe(true);
  }, 90_000);
});
