// A ledger batch's statements find rows by id, so they run on the plan any ids get (TransactionOptions.genericPlans).
// Left to choose, PostgreSQL planned a batch's check afresh at every batch: 0.66 ms of a 1.8 ms batch at one
// connection.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { postgresThroughProxy } from '../helpers/counting-proxy.ts';
import { openTestPglite, postgresAvailability, REQUIRE_POSTGRES } from '../helpers/databases.ts';

const DRAWS = 12;

/** Draws one by one on a lease (each its own batch), then how the connection planned the batches' statements. */
async function plansOfDraws(db: Db): Promise<{ statement: string; generic: number; custom: number }[]> {
  const ledger = createLedger(db, { clock: fixedClock('2026-05-01T00:00:00Z'), owner: 'plans' });
  const w = await ledger.createWallet({ credits: 10 });
  const r = await ledger.reserve({ walletId: w.id, vendor: 'b', amountNano: 5_000n, callId: 'lease:plans' });
  if (!r.ok) throw new Error(`lease refused: ${r.reason}`);
  for (let i = 0; i < DRAWS; i++) await ledger.draw(r.reservation, 100n, `plan-${i}`, undefined, { firstTry: () => true });
  const rows = await db.query<{ statement: string; generic_plans: string; custom_plans: string }>(
    'SELECT statement, generic_plans::text, custom_plans::text FROM pg_prepared_statements',
  );
  return rows.rows.map((x) => ({ statement: x.statement, generic: Number(x.generic_plans), custom: Number(x.custom_plans) }));
}

function expectPlannedOnce(plans: { statement: string; generic: number; custom: number }[]) {
  const write = plans.find((p) => p.statement.includes('INSERT INTO ledger_journal'));
  const lock = plans.find((p) => p.statement.includes('FOR UPDATE') && p.generic + p.custom >= DRAWS);
  // Every draw is a batch of its own: its lock and its write run each time, each on the one generic plan.
  expect(lock).toMatchObject({ custom: 0 });
  expect(lock!.generic).toBeGreaterThanOrEqual(DRAWS);
  expect(write).toMatchObject({ custom: 0 });
  expect(write!.generic).toBeGreaterThanOrEqual(DRAWS);
}

describe.runIf(postgresAvailability.ok || REQUIRE_POSTGRES)('a batch on PostgreSQL', () => {
  const pg = postgresThroughProxy({ max: 1 });
  it('runs its statements on their generic plans', async () => expectPlannedOnce(await plansOfDraws(pg.db)));
});

describe('a batch on PGlite', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openTestPglite();
  });
  afterAll(() => db?.close());
  it('runs its statements on their generic plans', async () => expectPlannedOnce(await plansOfDraws(db)));
});
