// Usage records as a call's charge rows, for ledger tests that drive a draw owed on its lease (a usage record's row
// carries the lease's id; other writers' rows take the Book's path).
import { fixedClock } from '../../engine/core/clock.ts';
import type { ChargeRows } from '../../engine/db/charge-rows.ts';
import type { Db } from '../../engine/db/db.ts';
import { createKeyService } from '../../engine/keys/index.ts';
import { usageRecordStorage } from '../../engine/usage/record-storage.ts';
import { type UsageRecordDraft, usageRecordRows } from '../../engine/usage/records.ts';

const usage = { input_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0, output_tokens: 1, web_search_calls: 0, file_search_calls: 0 };

/** The usage record of a chat call of `requestId` by `keyId`, finished at `at` (1 input and 1 output token unless told). */
export const recordDraft = (
  walletId: string,
  keyId: string,
  at: Date,
  requestId: string,
  tokens: UsageRecordDraft['usage'] = usage,
): UsageRecordDraft => ({
  requestId,
  walletId,
  keyId,
  at,
  door: 'chat',
  model: 'm',
  vendor: 'b',
  route: null,
  fallbackDepth: 0,
  usage: tokens,
  durationMs: 5,
  traceId: null,
  prices: null,
});

/** A key of `walletId` and, per request id, the usage record its call would be charged with at `at`. */
export async function usageRecordsOf(db: Db, walletId: string, at: Date) {
  await (await usageRecordStorage(db)).prepare(at);
  const keys = createKeyService(db, { clock: fixedClock(at.toISOString()) });
  const key = await keys.createApiKey(walletId, { monthlyLimitCredits: null, dailyLimitCredits: null, expiresOn: null });
  const keyId = (await keys.authenticate(key.key, 'api')).keyId;
  await keys.close();
  const draft = (requestId: string) => recordDraft(walletId, keyId, at, requestId);
  return {
    keyId,
    rows: (requestId: string): ChargeRows => usageRecordRows(draft(requestId)),
    /** How many records the wallet has under `requestId`. */
    count: async (requestId: string): Promise<number> =>
      (
        await db.query<{ n: number }>('SELECT count(*)::int AS n FROM usage_records WHERE wallet_id = $1 AND request_id = $2', [
          walletId,
          requestId,
        ])
      ).rows[0]!.n,
  };
}
