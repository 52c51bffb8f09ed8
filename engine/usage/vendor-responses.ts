// Answers the vendor stored, and whose they are: every wallet calls through one vendor account, so the vendor would
// replay one wallet's conversation to anyone naming its id. The charge writes one row per stored answer, and a later
// call may name only its own wallet's ids.

import type { StoredAnswer } from '../core/protocol.ts';
import { type ChargedItem, type ChargeRow, type ChargeRowWriter, chargeRow, type Statement } from '../db/charge-rows.ts';
import type { Db, Queryable } from '../db/db.ts';
import { jsonTable } from '../db/json-rows.ts';

/** One stored answer of a wallet's call. */
interface VendorResponseDraft {
  walletId: string;
  answer: StoredAnswer;
  at: Date;
}

/**
 * Inserts the stored answers of many charges at once. An id written again (a charge the spool writes a second
 * time) keeps its first row: the vendor never gives two answers one id, so the first row is the answer's.
 */
function vendorResponsesStatement(rows: readonly ChargedItem<VendorResponseDraft>[]): Statement | null {
  if (rows.length === 0) return null;
  return {
    sql: `INSERT INTO vendor_responses (id, wallet_id, item_ids, created_at)
     SELECT r.id, r.wallet_id, ARRAY(SELECT json_array_elements_text(r.item_ids)), r.created_at
       FROM ${RESPONSES.from('$1', 'r')}
     ON CONFLICT (id) DO NOTHING`,
    params: [RESPONSES.json(rows.map(({ item }) => [item.answer.id, item.walletId, item.answer.items, item.at]))],
  };
}

const RESPONSES = jsonTable('id text, wallet_id text, item_ids json, created_at timestamptz');

/** The writer the ledger's batches call with the stored answers of their charges. */
export const vendorResponseWriter: ChargeRowWriter<VendorResponseDraft> = {
  name: 'vendor_responses',
  statement: vendorResponsesStatement,
};

/**
 * Longest id recorded, in UTF-8 bytes. An index entry holds about 2,700 bytes, and the vendor's ids are some 60
 * characters: a longer one is not recorded, so a later call naming it is refused as one never stored.
 */
const MAX_ID_BYTES = 1_024;
const recordable = (id: string): boolean => Buffer.byteLength(id, 'utf8') <= MAX_ID_BYTES;

/** The charge row recording a call's stored answer; none when the vendor stored nothing it named, or named it too long. */
export function vendorResponseRows(draft: Omit<VendorResponseDraft, 'answer'> & { answer: StoredAnswer | null }): ChargeRow[] {
  const { answer } = draft;
  if (!answer || !recordable(answer.id)) return [];
  return [chargeRow(vendorResponseWriter, { ...draft, answer: { id: answer.id, items: answer.items.filter(recordable) } })];
}

/**
 * The ids among `ids` that no stored answer of the wallet has, as the answer's id or one of its items' ids: an
 * id of another wallet's answer is among them, exactly as one the vendor never made.
 */
export async function idsNotStoredFor(db: Queryable, walletId: string, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const r = await db.query<{ id: string }>(
    `SELECT x.id FROM unnest($2::text[]) AS x(id)
      WHERE NOT EXISTS (SELECT 1 FROM vendor_responses v
                         WHERE v.wallet_id = $1 AND (v.id = x.id OR v.item_ids @> ARRAY[x.id]))`,
    [walletId, [...new Set(ids)]],
  );
  return r.rows.map((row) => row.id);
}

/** Removes the stored answers recorded before `before`, as the usage records of their calls are. */
export async function pruneVendorResponses(db: Db, before: Date): Promise<void> {
  await db.query('DELETE FROM vendor_responses WHERE created_at < $1::timestamptz', [before.toISOString()]);
}
