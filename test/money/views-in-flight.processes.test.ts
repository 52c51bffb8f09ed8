// Every view tells the truth on every process: a call admitted on process A's budget lease is seen held by
// process B's GET /v1/credits within a second, and once the calls end GET /v1/credits (both processes), the
// admin view and the dashboard (its wallet page and the strip above every page) show nothing held and one
// balance. Before the lease's in-flight figure was told to the database, B answered `reserved_credits: 0`
// while the call was at the vendor, and the strip showed a lease's unused part as "held by calls in progress".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger, type Ledger } from '../../engine/money/ledger.ts';
import { type Simulator, startSimulator } from '../../simulator/index.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { vendorsAtSimulator } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
const ADMIN = 'views-admin-token';
const WALLET_CREDITS = 10_000_000; // $10: the shipped lease sizing leases a slice of it
const VENDOR_DELAY_MS = 3_000;

let pg: TestPostgres;
let sim: Simulator;
let ledger: Ledger;
const children: ChildGateway[] = [];

beforeAll(async () => {
  if (!canRun) return;
  pg = await openTestPostgres();
  sim = await startSimulator();
  ledger = createLedger(pg.db, { clock: systemClock });
}, 60_000);

afterAll(async () => {
  for (const c of children) c.remove();
  await sim?.close();
  await pg?.cleanup();
});

/** A gateway process on the shipped config (budget leases on), its vendors at the simulator. */
function gateway(apiKey: string): Promise<ChildGateway> {
  const env: Record<string, string> = {
    DATABASE_URL: pg.url,
    GATEWAY_SIMULATE: '0',
    LOG_LEVEL: 'warn',
    GATEWAY_ADMIN_TOKEN: ADMIN,
    ...vendorsAtSimulator(sim),
  };
  return startChildGateway(env, { apiKey }).then((c) => (children.push(c), c));
}

interface Credits {
  credits: number;
  reserved_credits: number;
}

async function credits(g: ChildGateway, key: string): Promise<Credits> {
  const r = await fetch(`${g.base}/v1/credits`, { headers: { authorization: `Bearer ${key}` } });
  expect(r.status).toBe(200);
  return r.json() as Promise<Credits>;
}

async function adminView(g: ChildGateway, walletId: string): Promise<Credits> {
  const r = await fetch(`${g.base}/admin/v1/wallets/${walletId}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  expect(r.status).toBe(200);
  return r.json() as Promise<Credits>;
}

/** The dashboard's wallet page as its owner sees it: signed in through a link the admin API made. */
async function walletPage(g: ChildGateway, walletId: string): Promise<string> {
  const link = await fetch(`${g.base}/admin/v1/wallets/${walletId}/sign-in-link`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  expect(link.status).toBe(201);
  const token = new URL(((await link.json()) as { url: string }).url).searchParams.get('token') ?? '';
  const signIn = await fetch(`${g.base}/dashboard/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
    redirect: 'manual',
  });
  const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
  expect(cookie, 'signed in').not.toBe('');
  const page = await fetch(`${g.base}/dashboard/wallet?lang=en`, { headers: { cookie } });
  expect(page.status).toBe(200);
  return page.text();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms: number): Promise<{ value: T; afterMs: number }> {
  const start = Date.now();
  let value = await read();
  while (!ok(value) && Date.now() - start < ms) {
    await sleep(50);
    value = await read();
  }
  return { value, afterMs: Date.now() - start };
}

describe.skipIf(!canRun)('every view tells the truth on every process', () => {
  let a: ChildGateway;
  let b: ChildGateway;
  let walletId: string;
  let key: string;

  beforeAll(async () => {
    const w = await ledger.createWallet({ credits: WALLET_CREDITS });
    walletId = w.id;
    const keys = createKeyService(pg.db, { clock: systemClock });
    ({ key } = await keys.createApiKey(walletId, { name: 'views' }));
    await keys.close();
    [a, b] = await Promise.all([gateway(key), gateway(key)]);
  }, 90_000);

  it("a call at the vendor through A is held in B's GET /v1/credits within a second; afterwards every view shows one balance and nothing held", async () => {
    sim.inject('b', { kind: 'delay', ms: VENDOR_DELAY_MS });
    const sentAt = Date.now();
    const call = fetch(`${a.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-4.1-mini', max_tokens: 2000, messages: [{ role: 'user', content: 'hello' }] }),
    });
    const seen = await until(
      () => credits(b, key),
      (c) => c.reserved_credits > 0,
      2_000,
    );
    const seenAfterMs = Date.now() - sentAt;
    expect(seen.value.reserved_credits, 'B never saw the hold of the call at the vendor').toBeGreaterThan(0);
    expect(seenAfterMs, 'seen within a second of sending').toBeLessThanOrEqual(1_000);
    // One balance: what is held plus what is left is the wallet (credits round down, holds up).
    expect(seen.value.credits + seen.value.reserved_credits).toBeGreaterThanOrEqual(WALLET_CREDITS);
    expect(seen.value.credits + seen.value.reserved_credits).toBeLessThanOrEqual(WALLET_CREDITS + 1);
    const leased = await pg.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM reservations WHERE wallet_id = $1 AND state = 'held' AND call_id LIKE 'lease:%'`,
      [walletId],
    );
    expect(Number(leased.rows[0]!.n), 'the call was not admitted on a lease: the test did not exercise one').toBeGreaterThan(0);
    const held = (await credits(a, key)).reserved_credits;
    expect(held, 'A and B show the same hold').toBe(seen.value.reserved_credits);

    const answer = await call;
    expect(answer.status).toBe(200);
    const charged = BigInt(answer.headers.get('x-service-charged-nano') ?? '-1');
    expect(charged).toBeGreaterThan(0n);
    const after = await until(
      () => credits(b, key),
      (c) => c.reserved_credits === 0,
      2_000,
    );
    expect(after.value.reserved_credits, 'B still shows a hold after the call ended').toBe(0);
    const left = Math.floor((WALLET_CREDITS * 1000 - Number(charged)) / 1000);
    expect(after.value.credits).toBe(left);
    expect(await credits(a, key)).toMatchObject({ credits: left, reserved_credits: 0 });
    expect(await adminView(b, walletId)).toMatchObject({ credits: left, reserved_credits: 0 });
    const page = await walletPage(b, walletId);
    expect(page).toMatch(/data-testid="reserved-credits">0</);
    expect(page, 'the strip says nothing is held').not.toContain('Held for calls in progress');
    const strip = /data-testid="summary".*?<\/p>/s.exec(page)?.[0] ?? '';
    expect(strip).toContain(`(${left.toLocaleString('en-US')} credits)`);
    await expectJournalAddsUp(pg.db, walletId);
  }, 60_000);
});
