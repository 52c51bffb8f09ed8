// Attack (wt-lockstall): on PostgreSQL the ledger's batches put the charges and holds of every wallet in shared
// queues (billing.yaml `ledger.queues`, default 1). Another session holding one wallet's rows locked (an
// operator's long transaction, a stuck session: `BEGIN; SELECT … FOR UPDATE` left open) made the batch that
// included that wallet wait on the lock, and every other wallet's calls queued behind it: all wallets stalled.
// Here wallet W1's rows are locked by another session while W2 makes one call after another: W2's calls must
// be answered promptly; W1's may wait or be refused (503), never answered free; once the lock goes, every call
// answered is charged exactly once and nothing stays held. Leases on and off.
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useSuiteGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp, walletView } from '../helpers/ledger.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
/** What a call of W2 may take while W1 is locked (the stall held them for as long as the lock). */
const PROMPT_MS = 2_000;

const chat = (t: TestGateway, key: string, signal: AbortSignal) =>
  fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    signal,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5', max_completion_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
  });

/** A call's status and how long it took, its body read; status 0 when it was given up after `timeoutMs`. */
async function timed(t: TestGateway, key: string, timeoutMs = 30_000): Promise<{ status: number; ms: number; body: string }> {
  const t0 = Date.now();
  try {
    const r = await chat(t, key, AbortSignal.timeout(timeoutMs));
    const body = await r.text();
    return { status: r.status, ms: Date.now() - t0, body };
  } catch {
    return { status: 0, ms: Date.now() - t0, body: '' };
  }
}

const charges = async (t: TestGateway, walletId: string) =>
  (
    await t.gw.db.query<{ n: number; d: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT request_id)::int AS d FROM usage_records WHERE wallet_id = $1',
      [walletId],
    )
  ).rows[0]!;

// The wallet's row alone (the batch waits in its write), its lots alone (in its locking statement), or both.
const LOCKS = {
  wallet: ['SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE'],
  lots: ['SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE'],
  both: ['SELECT 1 FROM wallets WHERE id = $1 FOR UPDATE', 'SELECT 1 FROM credit_lots WHERE wallet_id = $1 FOR UPDATE'],
};

for (const leases of [true, false]) {
  describe.skipIf(!canRun)(`one wallet locked by another session, leases ${leases ? 'on' : 'off'} [postgres]`, () => {
    const suite = useSuiteGateway('postgres', { leases });
    let pgs: TestPostgres;
    let t: TestGateway;
    beforeAll(() => {
      t = suite.gateway();
      pgs = suite.schema();
    });

    it.each(Object.keys(LOCKS) as (keyof typeof LOCKS)[])(
      "%s locked: the other wallets' calls are answered and charged promptly; the locked one's once it is let go",
      async (what) => {
        const w1wallet = await t.gw.ledger.createWallet({ credits: 10_000_000 });
        const w1 = { id: w1wallet.id, key: (await t.gw.keys.createApiKey(w1wallet.id, { name: 'w1' })).key };
        const w2wallet = await t.gw.ledger.createWallet({ credits: 10_000_000 });
        const w2 = { id: w2wallet.id, key: (await t.gw.keys.createApiKey(w2wallet.id, { name: 'w2' })).key };
        for (const w of [w1, w2]) expect((await timed(t, w.key)).status).toBe(200);

        const locker = new pg.Client({ connectionString: pgs.url });
        await locker.connect();
        await locker.query('BEGIN');
        for (const sql of LOCKS[what]) await locker.query(sql, [w1.id]);
        const w1Calls: ReturnType<typeof timed>[] = [];
        const w2Calls: Awaited<ReturnType<typeof timed>>[] = [];
        try {
          for (let i = 0; i < 8; i++) {
            if (i % 3 === 0) w1Calls.push(timed(t, w1.key)); // W1's calls go on meanwhile, not waited for
            await new Promise((r) => setTimeout(r, 50));
            w2Calls.push(await timed(t, w2.key, 5_000)); // a stalled call is given up, for the test to end
          }
        } finally {
          await locker.query('ROLLBACK');
          await locker.end();
        }
        const w1Done = await Promise.all(w1Calls);
        console.log({ leases, what, w2: w2Calls.map((c) => `${c.status}:${c.ms}ms`), w1: w1Done.map((c) => `${c.status}:${c.ms}ms`) });
        for (const c of w2Calls) expect(c.status).toBe(200);
        expect(Math.max(...w2Calls.map((c) => c.ms))).toBeLessThan(PROMPT_MS);
        for (const c of w1Done) expect([200, 503]).toContain(c.status);
        // Refused in the door's shape, saying why (nothing charged).
        for (const c of w1Done.filter((c) => c.status === 503)) expect(JSON.parse(c.body).error.message).toMatch(/Nothing was charged/);

        // Once the lock is gone every charge lands, once; nothing stays held.
        await t.gw.leases.flushed();
        const answered: Record<string, number> = {
          [w1.id]: 1 + w1Done.filter((c) => c.status === 200).length,
          [w2.id]: 1 + w2Calls.length,
        };
        for (const w of [w1, w2]) {
          for (let i = 0; i < 200 && (await charges(t, w.id)).n < answered[w.id]!; i++) await new Promise((r) => setTimeout(r, 50));
          expect(await charges(t, w.id)).toEqual({ n: answered[w.id], d: answered[w.id] });
          await expectJournalAddsUp(t.gw.db, w.id);
          expect((await walletView(t.gw, w.id)).heldNano).toBe(0n);
        }
      },
      90_000,
    );
  });
}
