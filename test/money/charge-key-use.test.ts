// A call's charge counts on its key through the rollup row its usage record writes (the key's day and month are
// sums of usage_daily): when the database refuses the charge's rows for good, the charge is written again with the
// rollup row alone before none, so the key's quotas still count what was charged (as the key's counter did).
import { expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import { type ChargeRowWriter, chargeRow } from '../../engine/db/charge-rows.ts';
import type { Db } from '../../engine/db/db.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import { gatewayLeases } from '../../engine/money/lease-wiring.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { HoldRenewals } from '../../engine/money/renewals.ts';
import { createWalletAccounts } from '../../engine/money/wallet-accounts.ts';
import { usageRecordStorage } from '../../engine/usage/record-storage.ts';
import { usageRecordRows } from '../../engine/usage/records.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

/** A writer whose statement the database refuses for good (division by zero: SQLSTATE 22012). */
const refused: ChargeRowWriter<null> = {
  name: 'refused',
  statement: () => ({ sql: 'INSERT INTO charge_key_use_notes (n) SELECT 1 / 0', params: [] }),
};
const quiet = { warn: () => {}, error: () => {} };
const speechModel = new Runtime({ config: 'config', catalog: 'catalog' }).snapshot().catalog.models.get('tts-1')!;

describeEachDatabase("a charge's use on its key", (getDb: () => Db) => {
  it('counts when its usage record is refused for good: its rollup row is written alone, once; the cap sees it', async () => {
    const clock = fixedClock('2026-06-10T03:00:00Z');
    await getDb().query('CREATE TABLE IF NOT EXISTS charge_key_use_notes (n int)');
    await (await usageRecordStorage(getDb())).prepare(clock.now());
    const ledger = createLedger(getDb(), { clock, owner: 'key-use' });
    const keys = createKeyService(getDb(), { clock });
    const errors: object[] = [];
    const writer = new ChargeWriter(() => quiet);
    const renewals = new HoldRenewals(ledger, () => clock.now(), quiet);
    const accounts = createWalletAccounts({
      keys,
      ledger,
      db: getDb(),
      clock,
      suggestModel: () => undefined,
      log: { error: (o) => void errors.push(o) },
      writer,
      renewals,
      leases: gatewayLeases(getDb(), ledger, clock, () => undefined, quiet, writer, renewals),
    });
    try {
      const w = await ledger.createWallet({ credits: 1_000 });
      const { key, id } = await keys.createApiKey(w.id, { name: 'capped', monthlyLimitCredits: 100 });
      const caller = await accounts.authenticate({ authorization: `Bearer ${key}` });
      const hold = await accounts.admit(caller, speechModel, 40_000n, 'call-1');
      const draft = {
        requestId: 'req-1',
        walletId: w.id,
        keyId: id,
        at: clock.now(),
        door: 'speech',
        model: speechModel.id,
        vendor: speechModel.vendor,
        route: null,
        fallbackDepth: 0,
        usage: {
          input_tokens: 1,
          output_tokens: 0,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          web_search_calls: 0,
          file_search_calls: 0,
        },
        durationMs: 1,
        traceId: null,
        prices: null,
      };
      const charged = await accounts.charge(caller, hold, 30_000n, [chargeRow(refused, null), ...usageRecordRows(draft)]).committed;
      expect(charged).toBe(30_000n);
      expect(errors).toEqual([expect.objectContaining({ callId: 'call-1', rowsLeft: 'key use' })]);
      const records = await getDb().query('SELECT 1 FROM usage_records WHERE wallet_id = $1', [w.id]);
      expect(records.rows).toHaveLength(0);
      expect((await keys.quota.usage([id], clock.now())).get(id)).toEqual({ dayNano: 30_000n, monthNano: 30_000n });
      // The key's cap counts it: 100 credits less 30 used leaves room for 70, not 70 and a nano.
      const cap = keys.quota.monthlyCap(await keys.authenticate(key, 'api'), clock.now())!;
      const reserve = (amountNano: bigint, callId: string) =>
        ledger.reserve({ walletId: w.id, vendor: 'b', amountNano, callId, keyId: id, cap });
      expect(await reserve(70_001n, 'over')).toMatchObject({ ok: false, reason: 'key_limit', keyUsedNano: 30_000n, keyHeldNano: 0n });
      const fits = await reserve(70_000n, 'fits');
      expect(fits.ok).toBe(true);
      if (fits.ok) await ledger.release(fits.reservation);
      await expectJournalAddsUp(getDb(), w.id);
    } finally {
      await keys.close();
    }
  });
});
