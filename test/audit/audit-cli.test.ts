// The audit trail of the operator's command line: `gateway wallet topup|owner` and `management-key
// create|close`, run straight against PostgreSQL and through a running gateway on the embedded database, each
// appear once, as the operator at the command line (`cli`), with no address or user agent.
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../engine/audit/query.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

function cli(args: string[], env: Record<string, string>): Promise<any> {
  const base: Record<string, string> = { ...(process.env as Record<string, string>) };
  delete base.DATABASE_URL;
  delete base.GATEWAY_ADMIN_TOKEN;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', 'engine/cli/cli.ts', ...args], { env: { ...base, ...env } }, (err, stdout, stderr) => {
      if (err) reject(new Error(`gateway ${args.join(' ')}: ${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

/** Runs each audited command once; returns what the trail must then hold, by action. */
async function runCommands(env: Record<string, string>) {
  const wallet = await cli(['wallet', 'create', '--owner', 'alice'], env);
  const lot = await cli(['wallet', 'topup', wallet.id, '--credits', '7', '--vendors', 'c'], env);
  const mk = await cli(['management-key', 'create', wallet.id, '--name', 'ops'], env);
  await cli(['management-key', 'close', wallet.id, mk.id], env);
  await cli(['wallet', 'owner', wallet.id, 'bob'], env);
  return { walletId: wallet.id as string, lotId: lot.lot_id as string, mk: mk as { id: string; key: string } };
}

function expectTrail(entries: any[], made: Awaited<ReturnType<typeof runCommands>>) {
  const byAction = (action: string) => entries.filter((e) => e.action === action);
  expect(entries.map((e) => e.action)).toEqual(['owner.changed', 'management_key.closed', 'management_key.created', 'credits.added']);
  for (const e of entries) {
    expect(e.actor).toEqual({ kind: 'operator', id: 'cli' });
    expect(e.ip).toBeNull();
    expect(e.user_agent).toBeNull();
  }
  expect(byAction('credits.added')[0]).toMatchObject({ target_id: made.lotId, after: { credits: 7, vendors: ['c'] } });
  expect(byAction('management_key.created')[0]).toMatchObject({ target_id: made.mk.id, after: { name: 'ops', created_by: 'alice' } });
  expect(byAction('management_key.closed')[0]).toMatchObject({ target_id: made.mk.id, after: { status: 'closed' } });
  expect(byAction('owner.changed')[0]).toMatchObject({ before: { owner_id: 'alice' }, after: { owner_id: 'bob' } });
  expect(JSON.stringify(entries)).not.toContain(made.mk.key);
}

describe.skipIf(!postgresAvailability.ok && !REQUIRE_POSTGRES)('the command line straight to PostgreSQL [postgres]', () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await openTestPostgres({ migrate: true });
  });
  afterAll(() => pg?.cleanup());

  it('records each command once, as the operator at the command line', async () => {
    const made = await runCommands({ DATABASE_URL: pg.url });
    const { data } = await listAudit(pg.db, made.walletId, { limit: 100, offset: 0 });
    expectTrail(data, made);
  }, 120_000);
});

describe('the command line through a running gateway on the embedded database', () => {
  let g: ChildGateway;
  const ADMIN_TOKEN = 'cli-audit-admin';
  beforeAll(async () => {
    g = await startChildGateway({ LOG_LEVEL: 'warn', GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN });
  }, 60_000);
  afterAll(() => g?.remove());

  it('records each command once as the command line, not as an admin API caller', async () => {
    const made = await runCommands({ GATEWAY_DATA_DIR: g.dataDir, GATEWAY_CONFIG_DIR: g.tree.config, GATEWAY_CATALOG_DIR: g.tree.catalog });
    const res = await fetch(`${g.base}/admin/v1/wallets/${made.walletId}/audit`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(200);
    expectTrail(((await res.json()) as any).data, made);
  }, 120_000);
});
