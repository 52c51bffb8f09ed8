// `npx gateway wallet list|owner` and `management-key create|list|close` as an operator runs them: through a
// real running gateway process on the embedded database, and straight to PostgreSQL. Each closed key is
// tried on a real key door (or the key service the doors use) and must be refused at once.
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { tempCatalogTree } from '../helpers/temp-catalog.ts';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

function cli(args: string[], env: Record<string, string>): Promise<Run> {
  const base: Record<string, string> = { ...(process.env as Record<string, string>) };
  delete base.DATABASE_URL;
  delete base.GATEWAY_ADMIN_TOKEN;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'engine/cli/cli.ts', ...args], { env: { ...base, ...env } }, (err, stdout, stderr) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr, json });
    });
  });
}

/** Follows next_cursor with `--limit 2` until the last page; returns the ids seen and the number of pages. */
async function listAll(env: Record<string, string>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await cli(['wallet', 'list', '--limit', '2', ...(cursor ? ['--cursor', cursor] : [])], env);
    expect(res.code, res.stderr).toBe(0);
    ids.push(...res.json.data.map((w: { id: string }) => w.id));
    cursor = res.json.next_cursor;
    pages++;
  } while (cursor && pages < 20);
  return { ids, pages };
}

/**
 * Won and names as the shipped billing.yaml has them (display_currency KRW at 1,400): a top-up typed in
 * dollars or won, a named wallet in the overview, sorted and as CSV, and a rename.
 */
async function wonAndNames(env: Record<string, string>) {
  const made = await cli(['wallet', 'create', '--name', '서울한빛중학교', '--credits', '₩70,000'], env);
  expect(made.code, made.stderr).toBe(0);
  expect(made.json).toMatchObject({ name: '서울한빛중학교', credits: 50_000_000, money: '₩70,000 · $50.00' });
  const id = made.json.id;
  const dollars = await cli(['wallet', 'topup', id, '--credits', '$5'], env);
  expect(dollars.code, dollars.stderr).toBe(0);
  expect(dollars.json).toMatchObject({ credits: 5_000_000, money: '₩7,000 · $5.00' });
  const won = await cli(['wallet', 'topup', id, '--credits', '₩7000'], env);
  expect(won.code, won.stderr).toBe(0);
  expect(won.json).toMatchObject({ credits: 5_000_000, money: '₩7,000 · $5.00' });
  const bad = await cli(['wallet', 'topup', id, '--credits', '₩7.5'], env);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toMatch(/credits must be .* or an amount as text such as '\$5', '₩7,000'/);
  const shown = await cli(['wallet', 'show', id], env);
  expect(shown.json).toMatchObject({
    name: '서울한빛중학교',
    credits: 60_000_000,
    money: '₩84,000 · $60.00',
    month_spent_credits: 0,
    last_call_at: null,
  });

  const sorted = await cli(['wallet', 'list', '--sort=-credits', '--limit', '1'], env);
  expect(sorted.code, sorted.stderr).toBe(0);
  expect(sorted.json.data.map((v: { id: string; name: string }) => [v.id, v.name])).toEqual([[id, '서울한빛중학교']]);
  const csv = await cli(['wallet', 'list', '--csv', '--sort', 'name'], env);
  expect(csv.code, csv.stderr).toBe(0);
  const lines = csv.stdout.trim().split('\r\n');
  expect(lines[0]).toBe(
    'id,name,balance_krw,balance_usd,balance_credits,month_spent_krw,month_spent_usd,month_spent_credits,keys_active,key_slots,last_call_at,owner_id,created_at',
  );
  expect(lines[1]).toMatch(new RegExp(`^${id},서울한빛중학교,84000,60\\.000000,60000000,0,0\\.000000,0,0,100,,`));

  const renamed = await cli(['wallet', 'rename', id, '--name', '서울한빛중'], env);
  expect(renamed.code, renamed.stderr).toBe(0);
  expect(renamed.json.name).toBe('서울한빛중');
}

/** The commands every way of running them must get right; `keyWorks` asks the gateway about a management key. */
async function exerciseCommands(env: Record<string, string>, keyWorks: (key: string) => Promise<boolean>) {
  const made: string[] = [];
  for (const credits of ['10', '20', '30']) {
    const res = await cli(['wallet', 'create', '--credits', credits, '--owner', 'alice'], env);
    expect(res.code, res.stderr).toBe(0);
    made.push(res.json.id);
  }
  const { ids, pages } = await listAll(env);
  expect(pages).toBeGreaterThan(1);
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids.slice(-3)).toEqual(made);

  const w = made[0]!;
  const topup = await cli(['wallet', 'topup', w, '--credits', '5', '--vendors', 'c'], env);
  expect(topup.code, topup.stderr).toBe(0);
  const shown = await cli(['wallet', 'show', w], env);
  expect(shown.json).toMatchObject({ credits: 15, general_credits: 10, restricted_credits: [{ vendors: ['c'], credits: 5 }] });
  await wonAndNames(env);

  const mk = await cli(['management-key', 'create', w, '--name', 'ops'], env);
  expect(mk.code, mk.stderr).toBe(0);
  expect(mk.json).toMatchObject({ name: 'ops', key: expect.stringMatching(/^sk-svcm-/) });
  const second = await cli(['management-key', 'create', w], env);
  expect(second.json.name).toBeNull();
  expect(await keyWorks(mk.json.key)).toBe(true);

  const listed = await cli(['management-key', 'list', w], env);
  expect(listed.code, listed.stderr).toBe(0);
  expect(listed.json.data.map((k: { id: string; status: string }) => [k.id, k.status])).toEqual([
    [mk.json.id, 'active'],
    [second.json.id, 'active'],
  ]);
  expect(listed.stdout).not.toContain(mk.json.key);

  const closed = await cli(['management-key', 'close', w, mk.json.id], env);
  expect(closed.code, closed.stderr).toBe(0);
  expect(closed.json).toEqual({ id: mk.json.id, object: 'management_key', closed: true });
  expect(await keyWorks(mk.json.key)).toBe(false);
  expect(await keyWorks(second.json.key)).toBe(true);
  const again = await cli(['management-key', 'close', w, mk.json.id], env);
  expect(again.code).toBe(1);
  expect(again.stderr).toMatch(/not_found_error/);

  const owner = await cli(['wallet', 'owner', w, 'bob'], env);
  expect(owner.code, owner.stderr).toBe(0);
  // It says which management keys it closed: the one still open, never its secret.
  expect(owner.json).toEqual({
    id: w,
    owner_id: 'bob',
    closed_management_keys: [{ id: second.json.id, name: null, key_prefix: expect.stringMatching(/^sk-svcm-/) }],
  });
  expect(second.json.key.startsWith(owner.json.closed_management_keys[0].key_prefix.replace(/…$/, ''))).toBe(true);
  expect(owner.stderr).toContain(`Closed 1 management key the previous owner made: ${second.json.id} (unnamed,`);
  expect(owner.stdout).not.toContain(second.json.key);
  const sameOwner = await cli(['wallet', 'owner', w, 'bob'], env);
  expect(sameOwner.json.closed_management_keys).toEqual([]);
  expect(await keyWorks(second.json.key)).toBe(false);
  const afterOwner = await cli(['management-key', 'list', w], env);
  expect(afterOwner.json.data.map((k: { status: string }) => k.status)).toEqual(['closed', 'closed']);

  for (const [args, pattern] of [
    [['wallet', 'list', '--limit', '0'], /limit/],
    [['wallet', 'list', '--cursor', 'bogus!'], /cursor/],
    [['management-key', 'list', 'wal_nope'], /not_found_error/],
    [['management-key', 'close', w], /usage: gateway management-key close <wallet-id> <key-id>/],
    [['wallet', 'owner', w], /usage: gateway wallet owner <wallet-id> <owner-id>/],
  ] as const) {
    const res = await cli([...args], env);
    expect(res.code, args.join(' ')).toBe(1);
    expect(res.stderr).toMatch(pattern);
    expect(res.stdout).toBe('');
  }
}

describe('admin commands through a running gateway on the embedded database', () => {
  let g: ChildGateway;
  beforeAll(async () => {
    g = await startChildGateway({ LOG_LEVEL: 'warn' });
  }, 60_000);
  afterAll(() => g?.remove());

  it('list, page, create, close and change the owner, and the gateway sees each change at once', async () => {
    const env = { GATEWAY_DATA_DIR: g.dataDir, GATEWAY_CONFIG_DIR: g.tree.config, GATEWAY_CATALOG_DIR: g.tree.catalog };
    const keyWorks = async (key: string) => {
      const res = await fetch(`${g.base}/v1/keys`, { headers: { authorization: `Bearer ${key}` } });
      if (res.status !== 200 && res.status !== 401) throw new Error(`unexpected ${res.status}: ${await res.text()}`);
      return res.status === 200;
    };
    await exerciseCommands(env, keyWorks);
  }, 180_000);
});

describe.skipIf(!postgresAvailability.ok && !REQUIRE_POSTGRES)('admin commands straight to PostgreSQL', () => {
  let pg: TestPostgres;
  const tree = tempCatalogTree();
  beforeAll(async () => {
    pg = await openTestPostgres();
  });
  afterAll(async () => {
    tree.remove();
    await pg?.cleanup();
  });

  it('list, page, create, close and change the owner, and the key service refuses closed keys', async () => {
    const env = { DATABASE_URL: pg.url, GATEWAY_CONFIG_DIR: tree.config, GATEWAY_CATALOG_DIR: tree.catalog };
    const keys = createKeyService(pg.db, { clock: systemClock });
    try {
      const keyWorks = (key: string) =>
        keys.authenticate(key, 'management').then(
          () => true,
          (e: { status?: number }) => {
            if (e.status !== 401) throw e;
            return false;
          },
        );
      await exerciseCommands(env, keyWorks);
    } finally {
      await keys.close();
    }
  }, 180_000);
});
