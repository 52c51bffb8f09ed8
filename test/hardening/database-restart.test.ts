// PostgreSQL restarted under load: while it is down calls answer 503 (never an answer without a reservation),
// the gateway process stays up, and once it is back calls pass again without restarting the gateway. A call
// whose answer was sent while the database could not take its settle is charged once the database is back,
// not left to the sweeper (which would release the hold and make the answer free).

import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { createGateway, type RunningGateway } from '../../engine/gateway.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { freePort } from '../helpers/free-port.ts';
import { TEST_NOW } from '../helpers/gateway.ts';
import { expectJournalAddsUp, walletView } from '../helpers/ledger.ts';
import { type PrivatePostgres, postgresBinDir, startPrivatePostgres } from '../helpers/private-postgres.ts';
import { VENDORS } from '../helpers/vendors.ts';

const canRun = postgresBinDir() !== null;
let pgServer: PrivatePostgres;
let sim: Simulator;
let gw: RunningGateway;
let url: string;
let walletId: string;
let apiKey: string;

beforeAll(async () => {
  if (!canRun) return;
  pgServer = await startPrivatePostgres(await freePort());
  sim = await startSimulator({ streamChunkDelayMs: 5 });
  const env: Record<string, string> = {
    GATEWAY_SIMULATE: '0',
    DATABASE_URL: pgServer.url,
    GATEWAY_CONFIG_DIR: 'config',
    GATEWAY_CATALOG_DIR: 'catalog',
  };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  gw = await createGateway({ env, clock: fixedClock(TEST_NOW), logger: false, sweeper: false });
  url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  walletId = (await gw.ledger.createWallet({ credits: 10_000_000 })).id;
  apiKey = (await gw.keys.createApiKey(walletId, { name: 'test' })).key;
}, 60_000);

afterAll(async () => {
  await gw?.close().catch(() => {});
  await sim?.close();
  await pgServer?.destroy();
});

function chat(words = 3, stream = false): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'b-5',
      stream,
      messages: [{ role: 'user', content: `hi [[sim:long=${words}]]` }],
      max_completion_tokens: 500,
    }),
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it.skipIf(!canRun)(
  'answers 503 while PostgreSQL is down, recovers without a restart, and charges the answers sent meanwhile',
  async () => {
    expect((await chat()).status).toBe(200);
    const before = await walletView(gw, walletId);

    // Streams in flight when the database goes away: their settles fail until it is back. Each has its answer
    // under way (reserved, first frames sent) before the database stops, however slowly a loaded machine
    // admits them; 80 words at 5 ms a frame keep it streaming while the database stops.
    const answered = await Promise.all(Array.from({ length: 6 }, () => chat(80, true)));
    const inFlight = answered.map(async (r) => ({ status: r.status, text: await r.text() }));
    await pgServer.stop();
    const whileDown = await Promise.all(Array.from({ length: 5 }, () => chat()));
    for (const r of whileDown) {
      expect(r.status).toBe(503);
      expect((await r.json()).error.type).toBeDefined();
    }
    const streams = await Promise.all(inFlight);
    await sleep(500);
    await pgServer.start();

    // Without a restart of the gateway, calls pass again.
    let recovered = false;
    for (let i = 0; i < 100 && !recovered; i++) {
      recovered = (await chat()).status === 200;
      if (!recovered) await sleep(100);
    }
    expect(recovered, 'calls did not pass again after PostgreSQL came back').toBe(true);

    // Every stream that completed was charged, late, once the database was back; nothing stays held.
    const completed = streams.filter((s) => s.status === 200 && s.text.includes('[DONE]')).length;
    expect(completed).toBeGreaterThan(0);
    let after = await walletView(gw, walletId);
    for (let i = 0; i < 100 && after.heldNano !== 0n; i++) {
      await sleep(100);
      after = await walletView(gw, walletId);
    }
    expect(after.heldNano, 'a hold stayed').toBe(0n);
    await expectJournalAddsUp(gw.db, walletId);
    // Every call charged has its usage record, written by the charge's own transaction.
    const charged = await gw.db.query<{ n: string }>(`SELECT count(*) AS n FROM usage_records WHERE wallet_id = $1`, [walletId]);
    expect(Number(charged.rows[0]!.n)).toBeGreaterThanOrEqual(completed + 2);
    expect(after.spendableNano < before.spendableNano).toBe(true);
  },
  60_000,
);
