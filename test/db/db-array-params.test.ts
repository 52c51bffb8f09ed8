// Array parameters on PostgreSQL (engine/db/pg-array.ts): whatever an array holds, the server reads back
// exactly what was sent, whether it went as our literal or through `pg`'s own encoder.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrayLiteral } from '../../engine/db/pg-array.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';

const canRun = postgresAvailability.ok || REQUIRE_POSTGRES;
let pgSchema: TestPostgres;
beforeAll(async () => {
  if (canRun) pgSchema = await openTestPostgres({ migrate: false });
});
afterAll(() => pgSchema?.cleanup());

// Strings built to hit what an array literal treats specially: quotes, backslashes, braces, commas, spaces,
// the word NULL, control characters, and text beyond ASCII.
const tricky = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom(
    '',
    ' ',
    'NULL',
    'null',
    '"',
    '\\',
    '{',
    '}',
    ',',
    'a,b',
    '{1,2}',
    ' x ',
    '\n',
    '\t',
    '\u0001',
    'é€😀',
    '\u2028',
    '"NULL"',
  ),
  fc.uuid(),
);

describe('array parameters', () => {
  it('take the literal for ids, amounts, times and nulls, and leave the rest to pg', () => {
    expect(arrayLiteral(['res_1', 'wal_2', null, ''])).toBe('{"res_1","wal_2",null,""}');
    expect(arrayLiteral(['12', 3, -4])).toBe('{"12",3,-4}');
    expect(arrayLiteral([])).toBe('{}');
    for (const other of [['a"b'], ['a\\b'], ['line\nbreak'], [new Date(0)], [[1]], [1n], [Number.NaN], [{}], [true]]) {
      expect(arrayLiteral(other as unknown[]), String(other)).toBeNull();
    }
  });

  it.runIf(canRun)('reads back every text array exactly as sent, on PostgreSQL', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(tricky, { nil: null }), { maxLength: 12 }), async (values) => {
        const r = await pgSchema.db.query<{ a: (string | null)[] }>('SELECT $1::text[] AS a', [values]);
        expect(r.rows[0]!.a).toEqual(values);
      }),
      { numRuns: 300 },
    );
  });

  it.runIf(canRun)('reads back amounts and times as the batch writes send them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }), { maxLength: 12 }),
        fc.array(fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true }), {
          maxLength: 6,
        }),
        async (amounts, times) => {
          const r = await pgSchema.db.query<{ amounts: string[]; times: Date[] }>(
            'SELECT $1::bigint[]::text[] AS amounts, $2::timestamptz[] AS times',
            [amounts.map((n) => (n === null ? null : n.toString())), times.map((t) => t.toISOString())],
          );
          expect(r.rows[0]!.amounts).toEqual(amounts.map((n) => (n === null ? null : n.toString())));
          expect(r.rows[0]!.times.map((t) => t.getTime())).toEqual(times.map((t) => t.getTime()));
        },
      ),
      { numRuns: 200 },
    );
  });
});
