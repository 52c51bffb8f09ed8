// Charge rows for ledger tests, written in the charge's own statement as a usage record is: a note of what each
// charge charged, a row the database refuses (division by zero, SQLSTATE 22012), a row that waits on an advisory
// lock the test holds (a charge's transaction kept open), and a use counted on a key's day.

import { koreanDate } from '../../engine/core/clock.ts';
import { type ChargeRows, type ChargeRowWriter, chargeRow } from '../../engine/db/charge-rows.ts';
import type { Db } from '../../engine/db/db.ts';

type Item = { tag: string; fail?: boolean; gate?: number };

const notes: ChargeRowWriter<Item> = {
  name: 'test_notes',
  statement: (rows) => ({
    sql: `INSERT INTO test_charge_notes (tag, charged_nano)
          SELECT t.tag, CASE WHEN t.fail THEN t.charged / 0 ELSE t.charged END
            FROM unnest($1::text[], $2::bigint[], $3::boolean[], $4::bigint[]) AS t(tag, charged, fail, gate)
           WHERE t.gate IS NULL OR (SELECT count(*) FROM (SELECT pg_advisory_xact_lock_shared(t.gate)) AS g) = 1`,
    params: [
      rows.map((r) => r.item.tag),
      rows.map((r) => r.chargedNano.toString()),
      rows.map((r) => r.item.fail === true),
      rows.map((r) => (r.item.gate === undefined ? null : String(r.item.gate))),
    ],
  }),
};

/** Notes that carry their charge's id, as a usage record does: a draw they record needs no draw row. */
const recordingNotes: ChargeRowWriter<{ tag: string }> = {
  name: 'test_recording_notes',
  statement: (rows) => ({
    sql: `INSERT INTO test_charge_notes (tag, charged_nano, transfer_id)
          SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])`,
    params: [rows.map((r) => r.item.tag), rows.map((r) => r.chargedNano.toString()), rows.map((r) => r.transferId)],
  }),
  // The notes keep no instant: every note is looked at (the window named only so the statement takes its parameters).
  transfersRecorded: {
    look: (ids, since, until) =>
      `SELECT transfer_id FROM test_charge_notes WHERE transfer_id = ANY(${ids}::text[]) AND ${since}::timestamptz < ${until}::timestamptz`,
    at: () => new Date(),
  },
};

/** Creates the notes' table (once per database). */
export async function chargeNotes(db: Db) {
  await db.query('CREATE TABLE IF NOT EXISTS test_charge_notes (tag text NOT NULL, charged_nano bigint NOT NULL, transfer_id text)');
  return {
    /** A row noting what the charge charged, under `tag`, and the charge's id: the draw's only record, as a usage record is. */
    recorded: (tag: string): ChargeRows => [chargeRow(recordingNotes, { tag })],
    /** A row noting what the charge charged, under `tag`. */
    noted: (tag: string): ChargeRows => [chargeRow(notes, { tag })],
    /** A row the database refuses for good: the charge's statement fails with 22012. */
    refused: (tag: string): ChargeRows => [chargeRow(notes, { tag, fail: true })],
    /** A noted row that first waits for the advisory lock `gate`, which the test holds to keep the charge open. */
    gated: (tag: string, gate: number): ChargeRows => [chargeRow(notes, { tag, gate })],
    /** What the charges noted under `tag` charged, in the order written. */
    charged: async (tag: string): Promise<bigint[]> =>
      (await db.query<{ n: string }>('SELECT charged_nano::text AS n FROM test_charge_notes WHERE tag = $1 ORDER BY ctid', [tag])).rows.map(
        (r) => BigInt(r.n),
      ),
  };
}

const keyDay: ChargeRowWriter<{ keyId: string; at: Date }> = {
  name: 'test_key_day',
  statement: (rows) => ({
    sql: `INSERT INTO usage_daily AS d (day, wallet_id, key_id, model, calls, charged_nano, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens)
          SELECT t.day, k.wallet_id, k.id, '', 1, t.charged, 0, 0, 0, 0
            FROM unnest($1::text[], $2::date[], $3::bigint[]) AS t(key_id, day, charged) JOIN api_keys k ON k.id = t.key_id
          ON CONFLICT (wallet_id, day, key_id, model) DO UPDATE SET calls = d.calls + 1, charged_nano = d.charged_nano + EXCLUDED.charged_nano`,
    params: [rows.map((r) => r.item.keyId), rows.map((r) => koreanDate(r.item.at)), rows.map((r) => r.chargedNano.toString())],
  }),
  countsKeyUse: true,
};

/** The row that counts a charge on its key's Korean day, as a usage record's rollup row does. */
export const keyDayRows = (keyId: string, at: Date): ChargeRows => [chargeRow(keyDay, { keyId, at })];
