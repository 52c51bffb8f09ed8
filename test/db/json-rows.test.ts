// Rows as one JSON parameter (engine/db/json-rows.ts), read back by `json_to_recordset` on both databases: every
// value comes back as sent, bigints beyond a double's precision included, and text PostgreSQL's JSON reader would
// refuse (a NUL, a lone surrogate) arrives as U+FFFD instead of failing the statement, and with it a charge.
import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { Db } from '../../engine/db/db.ts';
import { jsonTable } from '../../engine/db/json-rows.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const TABLE = jsonTable('name text, amount bigint, at timestamptz, day date, n int, extra jsonb');
const SQL = `SELECT name, amount::text AS amount, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at,
                    day::text AS day, n, extra
               FROM ${TABLE.from('$1', 'r')}`;

type Row = { name: string | null; amount: string | null; at: string | null; day: string | null; n: number | null; extra: unknown };
const read = async (db: Db, rows: unknown[][]) => (await db.query<Row>(SQL, [TABLE.json(rows as never)])).rows;

describeEachDatabase('rows as one JSON parameter', (getDb) => {
  it('reads back every column as sent, in order, with nulls and an empty list', async () => {
    const at = new Date('2026-12-02T03:04:05.678Z');
    const rows = await read(getDb(), [
      ['first', 2n ** 62n + 1n, at, '2026-12-02', 7, { in: '12', out: [1, 2] }],
      [null, null, null, null, null, null],
      ['세 번째 "따옴표" \\ 백슬래시', -5n, at, '2026-01-31', 0, null],
    ]);
    expect(rows).toEqual([
      { name: 'first', amount: '4611686018427387905', at: at.toISOString(), day: '2026-12-02', n: 7, extra: { in: '12', out: [1, 2] } },
      { name: null, amount: null, at: null, day: null, n: null, extra: null },
      { name: '세 번째 "따옴표" \\ 백슬래시', amount: '-5', at: at.toISOString(), day: '2026-01-31', n: 0, extra: null },
    ]);
    expect(await read(getDb(), [])).toEqual([]);
  });

  it('turns a NUL and a lone surrogate into U+FFFD, in nested values too, and keeps text that only looks escaped', async () => {
    const rows = await read(getDb(), [
      ['a\u0000b', 1n, null, null, null, { k: 'x\ud800y' }],
      ['\udc00 and 😀', 2n, null, null, null, null],
      ['\\u0000 \\ud800 as typed', 3n, null, null, null, null],
    ]);
    expect(rows.map((r) => [r.name, r.extra])).toEqual([
      ['a\uFFFDb', { k: 'x\uFFFDy' }],
      ['\uFFFD and 😀', null],
      ['\\u0000 \\ud800 as typed', null],
    ]);
  });

  it('any string round-trips, made well-formed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ unit: 'binary' }), { maxLength: 8 }), async (names) => {
        const rows = await read(
          getDb(),
          names.map((n) => [n, null, null, null, null, null]),
        );
        const expected = names.map((n) =>
          n.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\uFFFD').replaceAll('\0', '\uFFFD'),
        );
        expect(rows.map((r) => r.name)).toEqual(expected);
      }),
      { numRuns: 100 },
    );
  });
});
