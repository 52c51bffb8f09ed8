// Attack (wt-moneyattack): usage far above the hold on the non-chat doors (embeddings, images of vendor B, vendor
// D images) and the free moderation door, 12 calls at once per door on a small wallet (leases on as shipped,
// PGlite). The vendor's `[[sim:usage …]]` figures are far above what the body allows. Each door: the wallet never
// goes below zero, nothing is charged above the usage's price, every 200 has one usage record, nothing stays held,
// the journal adds up; moderations charge nothing and work on an empty wallet.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ credits: 1 });
});
afterAll(() => t?.close());

async function burst(walletCredits: number, path: string, body: (i: number) => unknown, n = 12) {
  const w = await t.gw.ledger.createWallet({ credits: walletCredits });
  const { key } = await t.gw.keys.createApiKey(w.id, { name: path });
  const res = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const r = await fetch(`${t.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': `${path}-${Date.now()}-${i}` },
        body: JSON.stringify(body(i)),
      });
      const text = await r.text();
      return { status: r.status, charged: BigInt(r.headers.get('x-service-charged-nano') ?? '0'), text };
    }),
  );
  await t.gw.leases.flushed();
  const until = Date.now() + 10_000;
  while (Date.now() < until && (await t.held()) > 0n && t.gw.leases.stats().inFlightNano > 0n) await new Promise((r) => setTimeout(r, 100));
  const bal = await t.gw.ledger.balance(w.id);
  const recs = await t.gw.db.query<{ n: number; s: string }>(
    'SELECT count(*)::int AS n, coalesce(sum(charged_nano),0)::text AS s FROM usage_records WHERE wallet_id = $1',
    [w.id],
  );
  const held = await t.gw.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM reservations WHERE wallet_id = $1 AND state = 'held' AND call_id NOT LIKE 'lease:%'`,
    [w.id],
  );
  const spent = BigInt(walletCredits) * 1000n - bal.availableNano - bal.reservedNano;
  const statuses: Record<number, number> = {};
  for (const r of res) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const summary = { path, statuses, records: recs.rows[0]!.n, charged: recs.rows[0]!.s, spent: String(spent), ownHeld: held.rows[0]!.n };
  console.log(summary, res.find((r) => r.status !== 200 && r.status !== 402)?.text.slice(0, 200) ?? '');
  expect(bal.availableNano >= 0n).toBe(true);
  expect(spent).toBe(BigInt(recs.rows[0]!.s));
  expect(recs.rows[0]!.n).toBe(statuses[200] ?? 0);
  expect(held.rows[0]!.n).toBe(0);
  await expectJournalAddsUp(t.gw.db, w.id);
  return { summary, res };
}

describe('media doors with usage above the hold, a burst on a small wallet', () => {
  it('embeddings', async () => {
    const { summary } = await burst(2_000, '/v1/embeddings', (i) => ({
      model: 'text-embedding-3-large',
      input: `text ${i} [[sim:usage input=50000000]]`,
    }));
    expect(summary.statuses[200] ?? 0).toBeGreaterThan(0);
  }, 30_000);

  it('vendor B images', async () => {
    const { summary } = await burst(500_000, '/v1/images/generations', (i) => ({
      model: 'image-b-1',
      prompt: `a cat ${i} [[sim:usage input=10 output=400000]]`,
      n: 1,
    }));
    expect(summary.statuses[200] ?? 0).toBeGreaterThan(0);
  }, 30_000);

  it('vendor D images', async () => {
    const { summary } = await burst(200_000, '/v1/images/generations', (i) => ({ model: 'image-d-1', prompt: `a dog ${i}` }));
    expect(summary.statuses[200] ?? 0).toBeGreaterThan(0);
  }, 30_000);

  it('moderations are free, even on an empty wallet and with usage reported', async () => {
    const w = await t.gw.ledger.createWallet({ credits: 0 });
    const { key } = await t.gw.keys.createApiKey(w.id, { name: 'mod' });
    const statuses = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const r = await fetch(`${t.url}/v1/moderations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'omni-moderation-latest', input: `hello ${i} [[sim:usage input=900000]]` }),
        });
        await r.text();
        return r.status;
      }),
    );
    const recs = await t.gw.db.query<{ s: string }>(
      'SELECT coalesce(sum(charged_nano),0)::text AS s FROM usage_records WHERE wallet_id = $1',
      [w.id],
    );
    console.log({ moderation: statuses, charged: recs.rows[0]!.s });
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(recs.rows[0]!.s).toBe('0');
  }, 30_000);
});
