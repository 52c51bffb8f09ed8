// A call on a reservation of its own that outlives reservation_ttl_ms (an operator's short setting, a slow stream):
// its hold is renewed while it runs, so the sweeper does not give its money back to be spent again. Without the
// renewal the sweeper expired the hold after its ttl, other calls spent the wallet, and the call's charge found
// nothing left: charged 0 of its cost.
import { expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { systemClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import { gatewayLeases } from '../../engine/money/lease-wiring.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { HoldRenewals } from '../../engine/money/renewals.ts';
import { createWalletAccounts } from '../../engine/money/wallet-accounts.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const TTL_MS = 600;
const quiet = { warn: () => {}, error: () => {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const speechModel = new Runtime({ config: 'config', catalog: 'catalog' }).snapshot().catalog.models.get('tts-1')!;

/** A ledger with a short hold life and accounts over it (leases off) that count the renewals they ask for. */
function setUp(db: Db, owner: string) {
  const ledger = createLedger(db, { clock: systemClock, owner, reservationTtlMs: TTL_MS });
  const keys = createKeyService(db, { clock: systemClock });
  const renewals = { count: 0 };
  const extendAll: typeof ledger.extendAll = (ids, until) => {
    renewals.count++;
    return ledger.extendAll(ids, until);
  };
  const writer = new ChargeWriter(() => quiet);
  const holdRenewals = new HoldRenewals({ extendAll }, () => systemClock.now(), quiet);
  const accounts = createWalletAccounts({
    keys,
    ledger,
    db,
    clock: systemClock,
    suggestModel: () => undefined,
    log: quiet,
    writer,
    renewals: holdRenewals,
    leases: gatewayLeases(db, ledger, systemClock, () => undefined, quiet, writer, holdRenewals),
  });
  return { db, ledger, keys, accounts, renewals };
}

describeEachDatabase("a call's own hold", (getDb: () => Db) => {
  it('is renewed while its call runs past reservation_ttl_ms, and the call is charged in full', async () => {
    const { db, ledger, keys, accounts, renewals } = setUp(getDb(), 'own-hold');
    const w = await ledger.createWallet({ credits: 1_000 }); // 1,000,000 nano
    const { key } = await keys.createApiKey(w.id, { name: 'long call' });
    const caller = await accounts.authenticate({ authorization: `Bearer ${key}` });
    const COST = 400_000n;
    const hold = await accounts.admit(caller, speechModel, COST, 'long-call');
    // The call runs for three ttls; the sweeper runs meanwhile.
    for (let i = 0; i < 6; i++) {
      await sleep(TTL_MS / 2);
      await ledger.sweepExpired();
    }
    const held = await db.query<{ state: string }>(`SELECT state FROM reservations WHERE call_id = 'long-call'`);
    expect(held.rows.map((r) => r.state)).toEqual(['held']);
    expect(renewals.count).toBeGreaterThanOrEqual(6);
    // Everything else the wallet has is spent by other calls.
    const usable = await ledger.usableNano(w.id, speechModel.vendor);
    const other = await ledger.reserve({ walletId: w.id, vendor: speechModel.vendor, amountNano: usable, callId: 'other' });
    if (!other.ok) throw new Error('refused');
    await ledger.settle(other.reservation, usable);
    // The long call ends: it is charged what it cost, out of the hold kept for it.
    expect(await accounts.charge(caller, hold, COST).committed).toBe(COST);
    const { bal, sum } = await expectJournalAddsUp(getDb(), w.id);
    expect(bal).toMatchObject({ availableNano: 1_000_000n - usable - COST, reservedNano: 0n });
    expect(sum.chargedNano).toBe(usable + COST);
    // Charged: its renewals stop.
    const renewed = renewals.count;
    await sleep(TTL_MS);
    expect(renewals.count).toBe(renewed);
  });

  it('stops being renewed once the call gives it back', async () => {
    const { ledger, keys, accounts, renewals } = setUp(getDb(), 'own-hold-released');
    const w = await ledger.createWallet({ credits: 1_000 });
    const { key } = await keys.createApiKey(w.id, { name: 'failed call' });
    const caller = await accounts.authenticate({ authorization: `Bearer ${key}` });
    const hold = await accounts.admit(caller, speechModel, 400_000n, 'failed-call');
    await sleep(TTL_MS);
    expect(renewals.count).toBeGreaterThan(0);
    await accounts.release(hold);
    const renewed = renewals.count;
    await sleep(TTL_MS);
    expect(renewals.count).toBe(renewed);
    expect((await expectJournalAddsUp(getDb(), w.id)).bal).toMatchObject({ availableNano: 1_000_000n, reservedNano: 0n });
  });
});
