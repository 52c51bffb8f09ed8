// An answer a client received in full is charged, even when the database was down as it ended and the gateway was
// then killed: the charge went to the data folder's spool before the answer's end marker (the commit wait ran
// out), and the next gateway on that folder writes it once PostgreSQL is back. Real processes, a private
// PostgreSQL stopped and started, streams over loopback.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Db } from '../../engine/db/db.ts';
import { openDatabase } from '../../engine/db/open.ts';
import { spendableOf } from '../../engine/money/spendable.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { freePort } from '../helpers/free-port.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { type PrivatePostgres, postgresBinDir, startPrivatePostgres } from '../helpers/private-postgres.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresBinDir() !== null;
const adminToken = randomBytes(16).toString('hex');
let pgServer: PrivatePostgres;
let sim: Simulator;
let dataDir: string;
let env: Record<string, string>;
const children: ChildGateway[] = [];

beforeAll(async () => {
  if (!canRun) return;
  pgServer = await startPrivatePostgres(await freePort());
  sim = await startSimulator({ streamChunkDelayMs: 5 });
  dataDir = mkdtempSync(join(tmpdir(), 'gw-spool-'));
  env = { DATABASE_URL: pgServer.url, GATEWAY_SIMULATE: '0', GATEWAY_ADMIN_TOKEN: adminToken };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
}, 60_000);

afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await pgServer?.destroy();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A gateway process on the shared data folder, whose answers wait 300 ms at most for their charge's commit. */
async function launch(): Promise<ChildGateway> {
  const child = await startChildGateway(env, {
    apiKey: 'unused',
    dataDir,
    prepare: (tree) => tree.edit('config/billing.yaml', (y) => y.replace(/^ {2}commit_wait_ms: \d+/m, '  commit_wait_ms: 300')),
  });
  children.push(child);
  return child;
}

async function call(base: string, method: string, path: string, token: string, body?: unknown): Promise<Response> {
  return fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });
}

const streamBody = { model: 'b-5', stream: true, messages: [{ role: 'user', content: 'hi [[sim:long=80]]' }], max_completion_tokens: 500 };

it.skipIf(!canRun)(
  'a stream answered in full while PostgreSQL was down is charged by the next gateway after a SIGKILL',
  async () => {
    const first = await launch();
    const wallet = (await (await call(first.base, 'POST', '/admin/v1/wallets', adminToken, { credits: 10_000_000 })).json()) as {
      id: string;
    };
    const mk = (await (await call(first.base, 'POST', `/admin/v1/wallets/${wallet.id}/management-keys`, adminToken, {})).json()) as {
      key: string;
    };
    const apiKey = ((await (await call(first.base, 'POST', '/v1/keys', mk.key, { name: 'class' })).json()) as { data: { key: string }[] })
      .data[0]!.key;
    expect((await call(first.base, 'POST', '/v1/chat/completions', apiKey, { ...streamBody, stream: false })).status).toBe(200);

    // Streams under way (first frames read) when the database goes away: their charges cannot be written.
    const streams = await Promise.all(
      Array.from({ length: 4 }, () => call(first.base, 'POST', '/v1/chat/completions', apiKey, streamBody)),
    );
    const readers = streams.map((r) => r.body!.getReader());
    await Promise.all(readers.map((r) => r.read()));
    await pgServer.stop();
    const texts = await Promise.all(readers.map((r) => readAll(r)));
    const whole = texts.filter((t) => t.includes('data: [DONE]')).length;
    expect(whole).toBeGreaterThan(0); // the end marker went out once the commit wait ran out

    first.child.kill('SIGKILL');
    await first.exited;
    const spool = join(dataDir, 'charges');
    expect(existsSync(spool) && readdirSync(spool).length).toBe(1); // the killed process's charges, on disk

    await pgServer.start();
    const second = await launch();
    await second.waitFor(/charges left by a stopped process written/, 60_000);
    expect(readdirSync(spool)).toEqual([]);

    const db = await openDatabase({ url: pgServer.url, skipMigrations: true });
    try {
      await expectChargedOnce(db, wallet.id, 1 + whole);
    } finally {
      await db.close();
    }
  },
  180_000,
);

async function readAll(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  const dec = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
    if (done) return text;
    text += dec.decode(value, { stream: true });
  }
}

/** Every answer received in full has one usage record with its charge, and what left the wallet is their sum. */
async function expectChargedOnce(db: Db, walletId: string, answers: number): Promise<void> {
  const r = await db.query<{ n: string; s: string }>(
    'SELECT count(*) AS n, coalesce(sum(charged_nano), 0)::text AS s FROM usage_records WHERE wallet_id = $1 AND charged_nano > 0',
    [walletId],
  );
  expect(Number(r.rows[0]!.n)).toBeGreaterThanOrEqual(answers);
  const bal = await spendableOf(db, walletId); // a lease left held owes its records: every view counts them spent
  const spent = 10_000_000n * 1000n - bal.availableNano - bal.reservedNano;
  expect(spent).toBe(BigInt(r.rows[0]!.s));
  await expectJournalAddsUp(db, walletId);
}
