// Attack (wt-attack): usage far above the hold on a wallet whose money is mostly a vendor C pack (credits only
// vendor C models may spend, the spec's "Model access by credit type"). A vendor B call's charge past its hold
// takes "the wallet's available balance": it must take only lots vendor B may spend, never the vendor C pack,
// on the leased path and the exact one.
import { describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const gateway = useLeasedGateway('pglite', 100_000); // $0.10 for any vendor

describe('usage above the hold and a vendor C pack', () => {
  it('the vendor C pack pays nothing of a vendor B call', async () => {
    const t = gateway();
    await t.gw.ledger.topUp(t.walletId, { credits: 5_000_000, vendors: ['c'] }); // $5 for vendor C only
    const lotsBefore = (await t.gw.ledger.balance(t.walletId)).lots.map((l) => ({ id: l.id, available: String(l.availableNano) }));
    const res = await post(t, '/v1/chat/completions', {
      model: 'b-6',
      max_completion_tokens: 300,
      messages: [{ role: 'user', content: 'x [[sim:usage input=40 output=20000]]' }], // $0.6002 of vendor B work
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    await t.gw.leases.flushed();
    await sleep(300);
    const bal = await t.gw.ledger.balance(t.walletId);
    const lots = bal.lots.map((l) => ({
      id: l.id,
      vendors: (l as any).vendors,
      available: String(l.availableNano),
      reserved: String(l.reservedNano),
    }));
    console.log({ lotsBefore, lots, charged: res.headers.get('x-service-charged-nano') });
    // The vendor C lot keeps its whole $5; the general lot paid what it had ($0.10 of $0.6002: the rest a shortfall).
    const cLot = bal.lots.filter((l) => Array.isArray((l as any).vendors) && (l as any).vendors.includes('c'));
    expect(cLot.map((l) => l.availableNano + l.reservedNano)).toEqual([5_000_000_000n]);
    expect(res.headers.get('x-service-charged-nano')).toBe('100000000');
    await expectJournalAddsUp(t.gw.db, t.walletId);
  }, 30_000);
});
