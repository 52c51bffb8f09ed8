// Issue 39 across processes: the answer one gateway process relayed is its wallet's on every process of the
// same PostgreSQL, and after a restart. Wallet X's response (whole or streamed), made through process A, is
// continued by X through process B and through a process started after A stopped; wallet Y naming it, there
// too, gets the 404 with nothing sent or charged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { parseSse } from '../e2e/e2e.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const ADMIN = 'stored-admin-token';

let pgSchema: TestPostgres;
let sim: Simulator;
let a: ChildGateway;
let b: ChildGateway;
const wallets = { x: '', y: '' };
const keys = { x: '', y: '' };

function gateway(): Promise<ChildGateway> {
  const env: Record<string, string> = { DATABASE_URL: pgSchema.url, GATEWAY_SIMULATE: '0', LOG_LEVEL: 'warn', GATEWAY_ADMIN_TOKEN: ADMIN };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  return startChildGateway(env, { apiKey: keys.x });
}

const respond = (g: ChildGateway, key: string, body: Record<string, unknown>) =>
  fetch(`${g.base}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5-mini', max_output_tokens: 32, ...body }),
  });

const creditsOf = async (g: ChildGateway, walletId: string) =>
  ((await (await fetch(`${g.base}/admin/v1/wallets/${walletId}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as any)
    .credits;

/** Y names what X stored, on process `g`: 404 naming the field, nothing sent to the vendor, Y's credits unchanged. */
async function refusedForY(g: ChildGateway, body: Record<string, unknown>, field: string) {
  const before = await creditsOf(g, wallets.y);
  const sent = sim.received.length;
  const res = await respond(g, keys.y, body);
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(404);
  expect(json.error).toMatchObject({ type: 'not_found_error', param: field });
  expect(sim.received.length).toBe(sent);
  expect(await creditsOf(g, wallets.y)).toEqual(before);
}

async function continuedByX(g: ChildGateway, body: Record<string, unknown>) {
  const res = await respond(g, keys.x, body);
  expect(res.status, await res.text()).toBe(200);
}

beforeAll(async () => {
  if (!canRun) return;
  pgSchema = await openTestPostgres({ migrate: true });
  sim = await startSimulator();
  const ledger = createLedger(pgSchema.db, { clock: systemClock });
  const keyService = createKeyService(pgSchema.db, { clock: systemClock });
  for (const w of ['x', 'y'] as const) {
    wallets[w] = (await ledger.createWallet({ credits: 50_000_000 })).id;
    keys[w] = (await keyService.createApiKey(wallets[w], { name: w })).key;
  }
  await keyService.close();
  [a, b] = await Promise.all([gateway(), gateway()]);
}, 120_000);

afterAll(async () => {
  a?.remove();
  b?.remove();
  await sim?.close();
  await pgSchema?.cleanup();
});

describe.runIf(canRun)("a stored answer is its wallet's on every process and after a restart [postgres]", () => {
  let whole: { id: string; output: { id: string }[] };
  let streamed: { id: string; output: { id: string }[] };

  it("X's answers through A, whole and streamed, are refused to Y through B and continued by X through B", async () => {
    whole = (await (await respond(a, keys.x, { input: 'my essay' })).json()) as any;
    const events = parseSse(await (await respond(a, keys.x, { input: 'my essay, streamed', stream: true })).text());
    streamed = events.find((e) => e.data?.type === 'response.completed')?.data.response;
    for (const answer of [whole, streamed]) {
      expect(answer.id).toMatch(/^resp_/);
      await refusedForY(b, { previous_response_id: answer.id, input: 'go on' }, 'previous_response_id');
      await refusedForY(b, { input: [{ type: 'item_reference', id: answer.output[0]!.id }] }, 'input[0].id');
      await continuedByX(b, { previous_response_id: answer.id, input: 'go on' });
      await continuedByX(b, { input: [{ type: 'item_reference', id: answer.output[0]!.id }] });
    }
  }, 60_000);

  it('after A stops, a process started in its place knows them the same way', async () => {
    a.remove();
    a = await gateway();
    await refusedForY(a, { previous_response_id: whole.id, input: 'go on' }, 'previous_response_id');
    await continuedByX(a, { previous_response_id: streamed.id, input: 'go on' });
  }, 60_000);
});
