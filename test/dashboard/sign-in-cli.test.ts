// `gateway wallet sign-in-link` on PostgreSQL writes the link to the shared database itself; a gateway
// (another process's database connection) honours it, once: sessions and links live in the database.
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { freePort } from '../helpers/free-port.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { redeem } from './owner-client.ts';

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'engine/cli/cli.ts', ...args],
      { env: { ...(process.env as Record<string, string>), ...env } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe.skipIf(!postgresAvailability.ok && !REQUIRE_POSTGRES)('gateway wallet sign-in-link on PostgreSQL', () => {
  let pg: TestPostgres;
  let t: TestGateway;
  beforeAll(async () => {
    pg = await openTestPostgres();
    t = await startTestGateway({ env: { DATABASE_URL: pg.url } });
  });
  afterAll(async () => {
    await t?.close();
    await pg?.cleanup();
  });

  it('prints a link at GATEWAY_PUBLIC_URL that signs the owner in on the gateway, once; an unknown wallet exits 1', async () => {
    const out = await cli(['wallet', 'sign-in-link', t.walletId], { DATABASE_URL: pg.url, GATEWAY_PUBLIC_URL: 'https://gw.example.com/' });
    expect(out.code, out.stderr).toBe(0);
    const link = JSON.parse(out.stdout);
    expect(link.wallet_id).toBe(t.walletId);
    expect(link.url).toMatch(/^https:\/\/gw\.example\.com\/dashboard\/sign-in\?token=[A-Za-z0-9_-]{40,}$/);
    expect((await redeem(t, link.url)).status).toBe(303);
    expect((await redeem(t, link.url)).status).toBe(401);

    const missing = await cli(['wallet', 'sign-in-link', 'wal_missing'], {
      DATABASE_URL: pg.url,
      GATEWAY_PUBLIC_URL: 'https://gw.example.com',
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No wallet 'wal_missing'/);
  }, 60_000);

  it('without GATEWAY_PUBLIC_URL, links to the gateway answering at HOST:PORT, and to nothing when none answers there', async () => {
    const port = new URL(t.url).port;
    const found = await cli(['wallet', 'sign-in-link', t.walletId], {
      DATABASE_URL: pg.url,
      GATEWAY_PUBLIC_URL: '',
      HOST: '127.0.0.1',
      PORT: port,
    });
    expect(found.code, found.stderr).toBe(0);
    const link = JSON.parse(found.stdout);
    expect(link.url.startsWith(`http://127.0.0.1:${port}/dashboard/sign-in?token=`)).toBe(true);
    expect((await redeem(t, link.url)).status).toBe(303);

    // Issue 40: on PostgreSQL with nothing listening at the default origin, no link is printed (nor made).
    const free = await freePort();
    const nowhere = await cli(['wallet', 'sign-in-link', t.walletId], { DATABASE_URL: pg.url, GATEWAY_PUBLIC_URL: '', PORT: String(free) });
    expect(nowhere.code).toBe(1);
    expect(nowhere.stdout).toBe('');
    expect(nowhere.stderr).toContain(`no gateway answers at http://127.0.0.1:${free}`);
    expect(nowhere.stderr).toContain('Set GATEWAY_PUBLIC_URL');
  }, 60_000);
});
