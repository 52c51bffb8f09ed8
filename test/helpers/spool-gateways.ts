// Gateway processes on PostgreSQL that share a data folder, for the tests of the charge spool: a process is killed
// with charges kept on disk, and the next one on the same folder replays them.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from './databases.ts';
import { leasesOff, leasesOn } from './leased-gateway.ts';
import { vendorsAtSimulator } from './vendors.ts';

export const spoolTestsRun = postgresAvailability.ok || REQUIRE_POSTGRES;

export const post = (base: string, path: string, token: string, body?: unknown, requestId?: string) =>
  fetch(base + path, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      ...(requestId ? { 'x-request-id': requestId } : {}),
    },
    body: body === undefined ? null : JSON.stringify(body),
  });

export interface SpoolGateways {
  pgs(): TestPostgres;
  /** A data folder of its own, removed after the file's tests. */
  dataDir(prefix: string): string;
  /** A gateway on the folder, answering 300 ms before a charge commits (so charges go at risk and are kept). */
  launch(dataDir: string, leases: boolean): Promise<ChildGateway>;
  /** A wallet with $10M of credit and a key, warmed with one call. */
  walletWithKey(base: string): Promise<{ walletId: string; apiKey: string }>;
}

/** Registers the file's hooks: one PostgreSQL schema and one simulator for its tests. */
export function spoolGateways(): SpoolGateways {
  const adminToken = randomBytes(16).toString('hex');
  let pgs: TestPostgres | undefined;
  let sim: Simulator | undefined;
  const children: ChildGateway[] = [];
  const dirs: string[] = [];
  beforeAll(async () => {
    if (!spoolTestsRun) return;
    pgs = await openTestPostgres();
    sim = await startSimulator({ streamChunkDelayMs: 5 });
  }, 60_000);
  afterAll(async () => {
    for (const c of children) c.remove();
    await sim?.close();
    await pgs?.cleanup();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    pgs: () => pgs!,
    dataDir(prefix) {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
    async launch(dataDir, leases) {
      const env = {
        DATABASE_URL: pgs!.url,
        GATEWAY_SIMULATE: '0',
        GATEWAY_ADMIN_TOKEN: adminToken,
        LOG_LEVEL: 'warn',
        ...vendorsAtSimulator(sim!),
      };
      const c = await startChildGateway(env, {
        apiKey: 'unused',
        dataDir,
        prepare: (tree) =>
          tree.edit('config/billing.yaml', (y) =>
            (leases ? leasesOn : leasesOff)(y.replace(/^ {2}commit_wait_ms: \d+/m, '  commit_wait_ms: 300')),
          ),
      });
      children.push(c);
      return c;
    },
    async walletWithKey(base) {
      const wallet = (await (await post(base, '/admin/v1/wallets', adminToken, { credits: 10_000_000 })).json()) as { id: string };
      const mk = (await (await post(base, `/admin/v1/wallets/${wallet.id}/management-keys`, adminToken, {})).json()) as { key: string };
      const keys = (await (await post(base, '/v1/keys', mk.key, { name: 'class' })).json()) as { data: { key: string }[] };
      const apiKey = keys.data[0]!.key;
      const warm = await post(base, '/v1/chat/completions', apiKey, {
        model: 'b-5',
        max_completion_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(warm.status).toBe(200);
      await warm.text();
      return { walletId: wallet.id, apiKey };
    },
  };
}
