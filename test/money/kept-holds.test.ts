// A hold that charges kept on disk owe outlives its process: the sweeper leaves it past its expiry (for a day), and
// once its charges are written it is unmarked and lapses as any hold would. The charge writer marks it when it keeps
// a charge, before the answer's end, and unmarks it when the last one kept against it lands, before the spool forgets
// that charge.
import { expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { LEASE_CALL_PREFIX } from '../../engine/core/money.ts';
import type { Db } from '../../engine/db/db.ts';
import { ChargeWriter } from '../../engine/money/charge-writer.ts';
import { KeptHolds } from '../../engine/money/kept-holds.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { expireDueLots } from '../../engine/money/lot-expiry.ts';
import { spendableOf } from '../../engine/money/spendable.ts';
import { describeEachDatabase } from '../helpers/databases.ts';

const HOLD_MS = 60_000;
const DAY_MS = 86_400_000;
const quiet = { warn: () => undefined, error: () => undefined };

describeEachDatabase('a hold kept for charges on disk', (getDb: () => Db) => {
  it('is not swept at its expiry while marked, but a day after its mark; unmarked, it lapses', async () => {
    const clock = fixedClock('2026-12-03T05:00:00Z');
    const ledger = createLedger(getDb(), { clock, owner: 'test:1:kept' });
    const wallet = await ledger.createWallet({ credits: 10 });
    const at = (ms: number) => new Date(clock.now().getTime() + ms);
    const r = await ledger.reserve({ walletId: wallet.id, vendor: 'b', amountNano: 4_000n, callId: 'call_kept', expiresAt: at(HOLD_MS) });
    if (!r.ok) throw new Error('no hold');
    const id = r.reservation.id;
    const kept = async () =>
      (await getDb().query<{ kept: boolean }>('SELECT kept_at IS NOT NULL AS kept FROM reservations WHERE id = $1', [id])).rows[0]!.kept;
    const markedAt = (await getDb().query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;

    await ledger.keepHeld([id], true);
    expect(await kept()).toBe(true);
    clock.advance(2 * HOLD_MS);
    expect(await ledger.sweepExpired()).toBe(0);
    expect(await ledger.sweepExpired(new Date(markedAt.getTime() + DAY_MS - 60_000))).toBe(0);
    expect((await ledger.balance(wallet.id)).reservedNano).toBe(4_000n);
    expect(await ledger.sweepExpired(new Date(markedAt.getTime() + DAY_MS + 60_000))).toBe(1); // a day on: given back
    expect((await ledger.balance(wallet.id)).reservedNano).toBe(0n);

    const r2 = await ledger.reserve({ walletId: wallet.id, vendor: 'b', amountNano: 4_000n, callId: 'call_kept2', expiresAt: at(HOLD_MS) });
    if (!r2.ok) throw new Error('no hold');
    await ledger.keepHeld([r2.reservation.id], true);
    await ledger.keepHeld([r2.reservation.id], false);
    clock.advance(HOLD_MS + 1);
    expect(await ledger.sweepExpired()).toBe(1); // unmarked: it lapses with its life
  });

  it('shows a lease kept for charges on disk as held whole: its process may be gone, and no call spends it', async () => {
    const clock = fixedClock('2026-12-03T05:00:00Z');
    const ledger = createLedger(getDb(), { clock, owner: 'test:1:lease' });
    const wallet = await ledger.createWallet({ credits: 10 });
    const expiresAt = new Date(clock.now().getTime() + HOLD_MS);
    const r = await ledger.reserve({ walletId: wallet.id, vendor: 'b', amountNano: 6_000n, callId: `${LEASE_CALL_PREFIX}x`, expiresAt });
    if (!r.ok) throw new Error('no lease');
    const shown = async () => {
      const b = await spendableOf(getDb(), wallet.id, clock.now());
      return [b.availableNano, b.reservedNano];
    };
    expect(await shown()).toEqual([10_000n, 0n]); // no call in flight on it: the wallet's to spend
    await ledger.keepHeld([r.reservation.id], true);
    expect(await shown()).toEqual([4_000n, 6_000n]);
    await ledger.keepHeld([r.reservation.id], false);
    expect(await shown()).toEqual([10_000n, 0n]);
  });

  it("keeps a lease kept for charges on disk whole at its lot's expiry: none of it is voided", async () => {
    const clock = fixedClock('2026-12-03T05:00:00Z');
    const ledger = createLedger(getDb(), { clock, owner: 'test:1:term' });
    const wallet = await ledger.createWallet();
    const lotEnds = new Date(clock.now().getTime() + HOLD_MS);
    await ledger.topUp(wallet.id, { nano: 10_000n, expiresAt: lotEnds });
    const expiresAt = new Date(clock.now().getTime() + 2 * HOLD_MS);
    const r = await ledger.reserve({ walletId: wallet.id, vendor: 'b', amountNano: 6_000n, callId: `${LEASE_CALL_PREFIX}t`, expiresAt });
    if (!r.ok) throw new Error('no lease');
    await ledger.keepHeld([r.reservation.id], true);
    clock.advance(HOLD_MS + 1);
    const [e] = await expireDueLots(getDb(), 'test', clock.now(), (err) => {
      throw err;
    });
    expect([e?.expiredNano, e?.voidedNano]).toEqual([4_000n, 0n]); // the lot's rest, none of the kept lease's
    expect((await ledger.balance(wallet.id)).reservedNano).toBe(6_000n);
  });
});

it('the writer marks the hold when it keeps a charge, and unmarks it when the last one kept against it lands', async () => {
  const marks: [string, 'mark' | 'unmark'][] = [];
  let failMark = true;
  const kept = new KeptHolds(
    async (id, mark) => {
      if (mark && failMark) {
        failMark = false; // the database did not take the first mark: asked again at the charge's next failed try
        throw new Error('database down');
      }
      marks.push([id, mark ? 'mark' : 'unmark']);
    },
    () => undefined,
  );
  const landedLines: string[] = [];
  const spool = { keep: () => undefined, landed: (id: string) => void landedLines.push(id) } as never;
  const writer = new ChargeWriter(() => quiet, { firstMs: 1, maxMs: 1, attempts: 10 }, spool, kept);
  let tries = 0;
  const intent = (callId: string) => () => ({ callId, kind: 'draw' as const, reservationId: 'res_lease', costNano: 5n });
  const failingTwice = async () => {
    if (++tries <= 2) throw new Error('connection lost');
    return { chargedNano: 5n, shortfallNano: 0n };
  };
  const first = writer.submit('call_1', failingTwice, intent('call_1'));
  let land = (): void => undefined;
  const landing = new Promise<{ chargedNano: bigint; shortfallNano: bigint }>(
    (r) => (land = () => r({ chargedNano: 5n, shortfallNano: 0n })),
  );
  const second = writer.submit('call_2', () => landing, intent('call_2'));
  expect(second.answeredFirst()).toBe(true); // its answer goes out first: kept on disk
  await second.holdMarked(); // the answer's end waits for this
  await first.committed;
  await new Promise((r) => setTimeout(r, 20));
  expect(marks).toEqual([['res_lease', 'mark']]); // still owed by call_2

  const third = writer.submit('call_3', async () => ({ chargedNano: 1n, shortfallNano: 0n }), intent('call_3'));
  await third.committed;
  expect(third.answeredFirst()).toBe(true); // landed before it was kept: nothing to mark
  land();
  await second.committed;
  await new Promise((r) => setTimeout(r, 20));
  expect(marks).toEqual([
    ['res_lease', 'mark'],
    ['res_lease', 'unmark'],
  ]);
  // The spool forgets a kept charge only once its hold's mark says so: call_2's line after the unmark.
  expect(landedLines).toEqual(['call_1', 'call_2']);
});
