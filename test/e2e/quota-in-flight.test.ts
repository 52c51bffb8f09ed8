// A key's monthly limit holds against a client who sends many calls at once: the limit counts the calls
// still in flight on the key (what they hold), not only the finished ones, on both databases and across two
// gateways sharing one PostgreSQL. Over real loopback HTTP; the simulator answers every call with all the
// output max_completion_tokens allows, so each admitted call costs close to what it held.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DatabaseKind,
  databaseKinds,
  openTestPostgres,
  postgresAvailability,
  REQUIRE_POSTGRES,
  type TestPostgres,
} from '../helpers/databases.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { sleep } from './e2e.ts';

const C = 1000n; // nano-USD per credit
const LIMIT_CREDITS = 3000;
const PARALLEL = 40;

/**
 * b-5-nano on the chat door: the prompt (with the gateway's 1,000 tokens of overhead) at 0.05 credits a token
 * and at most 600 output tokens at 0.4: about 290 credits held per call. The simulator writes far more than
 * 600 tokens, so every answer is cut at 600 and costs about 240.
 */
const CALL = {
  model: 'b-5-nano',
  max_completion_tokens: 600,
  messages: [{ role: 'user', content: 'Say a lot, please. [[sim:long=1500]]' }],
};

function send(url: string, apiKey: string, body: unknown = CALL) {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Sends `n` calls at once, spread over the given gateways; returns each answer's status and body. */
async function burst(urls: string[], apiKey: string, n: number) {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await send(urls[i % urls.length]!, apiKey);
      return { status: res.status, body: (await res.json()) as any };
    }),
  );
}

/** Waits until the wallet holds nothing (every admitted call settled). */
async function settled(t: TestGateway) {
  for (let i = 0; i < 200; i++) {
    if ((await t.held()) === 0n) return;
    await sleep(25);
  }
  throw new Error('holds left behind');
}

const postgresMissing = postgresAvailability.ok ? '' : postgresAvailability.reason;

function describeOn(kind: DatabaseKind, fn: (start: (n?: number) => Promise<TestGateway[]>) => void) {
  const name = `monthly key limit with calls in flight [${kind}]`;
  if (kind === 'postgres' && !postgresAvailability.ok) {
    if (REQUIRE_POSTGRES) {
      describe(name, () => {
        it('PostgreSQL is required (REQUIRE_POSTGRES=1)', () => {
          throw new Error(postgresMissing);
        });
      });
    } else describe.skip(name, () => fn(async () => [] as TestGateway[]));
    return;
  }
  describe(name, () => {
    let pg: TestPostgres | undefined;
    const open: TestGateway[] = [];
    beforeAll(async () => {
      if (kind === 'postgres') pg = await openTestPostgres();
    });
    afterAll(async () => {
      for (const t of open.splice(0)) await t.close();
      await pg?.cleanup();
    });
    /** `n` gateways on one database (PostgreSQL only for more than one): separate ledgers, pools and queues. */
    const start = async (n = 1) => {
      const made: TestGateway[] = [];
      for (let i = 0; i < n; i++) {
        const t = await startTestGateway({ env: pg ? { DATABASE_URL: pg.url } : {} });
        open.push(t);
        made.push(t);
      }
      return made;
    };
    fn(start);
  });
}

for (const kind of databaseKinds) {
  describeOn(kind, (start) => {
    let t: TestGateway;
    beforeAll(async () => {
      [t] = (await start()) as [TestGateway];
    });

    it(`${PARALLEL} parallel calls on a key limited to ${LIMIT_CREDITS} credits use no more than the limit`, async () => {
      const { key, id } = await t.gw.keys.createApiKey(t.walletId, { name: 'limited', monthlyLimitCredits: LIMIT_CREDITS });
      const before = await t.balance();
      const sent = t.sim.received.length;

      // The vendor takes a moment, as a real one does: the calls are in flight together.
      t.sim.inject('b0', { kind: 'delay', ms: 300, times: PARALLEL });
      const answers = await burst([t.url], key, PARALLEL);
      await settled(t);
      t.sim.clearFaults();

      const ok = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status !== 200);
      // Each call may cost about 290 credits: some are admitted, and far fewer than all 40.
      expect(ok.length).toBeGreaterThan(0);
      expect(ok.length).toBeLessThan(PARALLEL);
      for (const r of refused) {
        expect(r.status).toBe(429);
        expect(r.body.error).toMatchObject({ type: 'key_limit_exceeded' });
      }
      // Refused while the first calls were still in flight: the message counts what they hold.
      expect(refused.some((r) => /held by this key's calls still in progress/.test(r.body.error.message))).toBe(true);
      // Refused calls reached no vendor.
      expect(t.sim.received.length - sent).toBe(ok.length);

      const usedNano = (await t.gw.keys.quota.usage([id], new Date(TEST_NOW))).get(id)!.monthNano;
      expect(usedNano).toBeGreaterThan(0n);
      expect(usedNano).toBeLessThanOrEqual(BigInt(LIMIT_CREDITS) * C);
      // The wallet paid exactly what the key counted, and the journal adds up with nothing held.
      expect(before - (await t.balance())).toBe(usedNano);
      await expectJournalAddsUp(t.gw.db, t.walletId);
    });

    it('the 429 says that asking for less (a lower output limit) lowers what the call may use', async () => {
      const { key } = await t.gw.keys.createApiKey(t.walletId, { name: 'small', monthlyLimitCredits: 100 });
      const before = await t.balance();
      const sent = t.sim.received.length;
      const res = await send(t.url, key);
      expect(res.status).toBe(429);
      const body = (await res.json()) as any;
      expect(body.error.type).toBe('key_limit_exceeded');
      expect(body.error.message).toContain('monthly limit');
      expect(body.error.message).toMatch(/a lower output limit/i);
      expect(t.sim.received.length).toBe(sent);
      expect(await t.balance()).toBe(before);
      // Lowered, the same call fits.
      const lower = await send(t.url, key, { ...CALL, max_completion_tokens: 100 });
      expect(lower.status).toBe(200);
      await lower.json();
      await settled(t);
    });

    if (kind === 'postgres') {
      it('two gateways on one PostgreSQL racing the same key do not pass the limit together', async () => {
        const [g1, g2] = await start(2);
        const { key, id } = await g1!.gw.keys.createApiKey(g1!.walletId, { name: 'shared', monthlyLimitCredits: LIMIT_CREDITS });
        const before = await g1!.balance();
        for (const g of [g1, g2]) g!.sim.inject('b0', { kind: 'delay', ms: 300, times: PARALLEL });
        const answers = await burst([g1!.url, g2!.url], key, PARALLEL);
        await settled(g1!);
        for (const g of [g1, g2]) g!.sim.clearFaults();

        const ok = answers.filter((a) => a.status === 200);
        expect(ok.length).toBeGreaterThan(0);
        for (const r of answers.filter((a) => a.status !== 200)) {
          expect(r.status).toBe(429);
          expect(r.body.error).toMatchObject({ type: 'key_limit_exceeded' });
        }
        expect(g1!.sim.received.length + g2!.sim.received.length).toBe(ok.length);
        const usedNano = (await g1!.gw.keys.quota.usage([id], new Date(TEST_NOW))).get(id)!.monthNano;
        expect(usedNano).toBeLessThanOrEqual(BigInt(LIMIT_CREDITS) * C);
        expect(before - (await g1!.balance())).toBe(usedNano);
        await expectJournalAddsUp(g1!.gw.db, g1!.walletId);
      });
    }
  });
}
