// Attack (budget leases): a call the wallet as a whole can pay was refused 402 while a lease of this process held
// part of the balance and one small call admitted on it was still running. The refused call asks the process's
// leases back, but a lease with a call in flight was only closed, not released, so the retry found the same
// balance. Found by the attack helper: a $1 wallet, a 2 s call in flight on the lease, then a call holding
// 930,505,000 nano with about 983,000,000 free: 402 ("899650 credits are available"). Across two processes on
// PostgreSQL the same held: 48 streams in flight on one gateway, a call the wallet could pay refused on the other.
// Now a lease asked back gives back at once what its calls in flight and its unwritten charges do not need.
import { beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../e2e/e2e.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp, walletView } from '../helpers/ledger.ts';

describe.each(['pglite', 'postgres'] as const)('a lease asked back while a call on it runs [%s]', (kind) => {
  const leasedGateway = useLeasedGateway(kind, 1_000_000); // $1 = 1,000,000,000 nano
  let t: TestGateway;
  beforeAll(() => {
    t = leasedGateway();
  });

  const chat = (maxTokens: number, text = 'hi [[sim:usage input=10 output=10]]') =>
    fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-6', max_completion_tokens: maxTokens, messages: [{ role: 'user', content: text }] }),
    });

  it('gives back what the call in flight does not need, so a call the wallet can pay is served; the slow call is still charged', async () => {
    for (let i = 0; i < 40; i++) {
      const r = await chat(100);
      expect(r.status).toBe(200);
      await r.text();
      await sleep(10);
    }
    const leased = await t.gw.db.query(`SELECT 1 FROM reservations WHERE call_id LIKE 'lease:%' AND state = 'held'`);
    expect(leased.rows.length).toBeGreaterThan(0);
    t.sim.inject('b0', { kind: 'delay', ms: 2_000 }); // one small call stays in flight on the lease
    const slow = chat(100);
    await sleep(200);
    await t.gw.leases.flushed(); // the small calls' charges written, so `before` counts only what is to come
    const before = await walletView(t.gw, t.walletId); // what the small calls' records owe counts as spent
    const big = await chat(31_000); // holds about 930,500,000 nano; the wallet has more, part of it in the lease
    const body = await big.text();
    expect(big.status, body.slice(0, 300)).toBe(200);
    const slowAnswer = await slow;
    expect(slowAnswer.status).toBe(200);
    await slowAnswer.text();
    const charged = [big, slowAnswer].map((r) => BigInt(r.headers.get('x-service-charged-nano')!));
    expect(charged[1]).toBeGreaterThan(0n);
    await t.gw.leases.flushed();
    // With its last call ended, the lease goes back at once (not at the next renewal round, 15 s away).
    const leaseHeld = async () =>
      Number(
        (await t.gw.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM reservations WHERE call_id LIKE 'lease:%' AND state = 'held'`))
          .rows[0]!.n,
      );
    for (let i = 0; i < 40 && (await leaseHeld()) > 0; i++) await sleep(50);
    expect(await leaseHeld()).toBe(0);
    const after = await walletView(t.gw, t.walletId);
    expect(after.heldNano).toBe(0n);
    // What left the wallet from then on is what the two answers said they cost.
    expect(before.spendableNano - after.spendableNano).toBe(charged[0]! + charged[1]!);
    await expectJournalAddsUp(t.gw.db, t.walletId);
  });
});
