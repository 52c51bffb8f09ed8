// The spool's replay by a live process: a dead process's charges are written once, at once when it ran on this
// host; a file of another host's (a shared folder, or one copied from a host lost for good) only once its process
// holds no hold, so a live process's charge is never written by two processes at once. Files dropped into the
// folder later are written by the next pass.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { LEASE_CALL_PREFIX } from '../../engine/core/money.ts';
import type { Db } from '../../engine/db/db.ts';
import { ChargeSpool, drawIntent } from '../../engine/money/charge-spool.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { startSpoolReplay } from '../../engine/money/spool-replay.ts';
import type { Ledger } from '../../engine/money/types.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

/** A pid no process has: far above Linux's pid_max. */
const DEAD_PID = 99_999_999;
const HOLD_MS = 60_000;
const log = { warn: () => undefined, error: () => undefined };
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A process `owner` that held `amount` and kept its charge of `cost` in the spool folder; and this process's replay. */
async function leftCharge(db: Db, owner: string, cost: bigint, everyMs = 3_600_000) {
  const clock = fixedClock('2026-12-03T05:00:00Z');
  const dir = mkdtempSync(join(tmpdir(), 'spool-replay-'));
  dirs.push(dir);
  const theirs = createLedger(db, { clock, owner });
  const wallet = await theirs.createWallet({ credits: 10 }); // 10,000 nano
  const expiresAt = new Date(clock.now().getTime() + HOLD_MS);
  const r = await theirs.reserve({ walletId: wallet.id, vendor: 'b', amountNano: 4_000n, callId: `call_${owner}`, expiresAt });
  if (!r.ok) throw new Error('no hold');
  new ChargeSpool(dir, owner).keep({ callId: `call_${owner}`, kind: 'settle', reservationId: r.reservation.id, costNano: cost });
  const mine = createLedger(db, { clock, owner: `${hostname()}:${process.pid}:me` });
  const replay = startSpoolReplay({
    spool: new ChargeSpool(dir, mine.owner),
    ledger: mine,
    db,
    clock,
    rowWriters: [],
    log: () => log,
    everyMs,
  });
  const state = async () =>
    (
      await db.query<{ state: string; charged: string }>('SELECT state, charged_nano::text AS charged FROM reservations WHERE id = $1', [
        r.reservation.id,
      ])
    ).rows[0];
  return { clock, dir, replay, state, wallet, ledger: mine, theirs, expiresAt };
}

/** A lost host's lease of 6,000 nano, marked kept, with a draw of 2,500 kept in the spool; and a replay by `ledger`. */
async function keptLease(db: Db) {
  const owner = 'lost-host:77:lease';
  const clock = fixedClock('2026-12-03T05:00:00Z');
  const dir = mkdtempSync(join(tmpdir(), 'spool-replay-'));
  dirs.push(dir);
  const theirs = createLedger(db, { clock, owner });
  const wallet = await theirs.createWallet({ credits: 10 });
  const r = await theirs.reserve({
    walletId: wallet.id,
    vendor: 'b',
    amountNano: 6_000n,
    callId: `${LEASE_CALL_PREFIX}${owner}`,
    expiresAt: new Date(clock.now().getTime() + HOLD_MS),
  });
  if (!r.ok) throw new Error('no lease');
  await theirs.keepHeld([r.reservation.id], true);
  new ChargeSpool(dir, owner).keep(drawIntent(r.reservation.id, 2_500n, `call_drawn_${wallet.id}`, undefined));
  const mine = createLedger(db, { clock, owner: `${hostname()}:${process.pid}:me` });
  const replayBy = (ledger: Ledger) =>
    startSpoolReplay({ spool: new ChargeSpool(dir, mine.owner), ledger, db, clock, rowWriters: [], log: () => log });
  const lease = async () =>
    (
      await db.query<{ state: string; charged: string }>('SELECT state, charged_nano::text AS charged FROM reservations WHERE id = $1', [
        r.reservation.id,
      ])
    ).rows[0];
  /** One replay pass by `ledger` writes the file's charge and gives the rest of the lease back. */
  const replayedWhole = async (ledger: Ledger) => {
    const replay = replayBy(ledger);
    try {
      await replay.pass();
      expect(readdirSync(dir)).toEqual([]);
      expect(await lease()).toEqual({ state: 'released', charged: '2500' });
      const b = await mine.balance(wallet.id);
      expect([b.availableNano, b.reservedNano]).toEqual([7_500n, 0n]);
      await expectJournalAddsUp(db, wallet.id);
    } finally {
      await replay.stop();
    }
  };
  return { dir, mine, replayBy, lease, replayedWhole };
}

describeEachDatabase('the spool replay', (getDb: () => Db) => {
  it("writes a dead process of this host's charge at once, though its hold has not expired yet", async () => {
    const t = await leftCharge(getDb(), `${hostname()}:${DEAD_PID}:dead`, 2_500n);
    try {
      await t.replay.pass();
      expect(await t.state()).toEqual({ state: 'settled', charged: '2500' });
      expect(readdirSync(t.dir)).toEqual([]);
      expect((await t.ledger.balance(t.wallet.id)).availableNano).toBe(7_500n);
      await expectJournalAddsUp(getDb(), t.wallet.id);
    } finally {
      await t.replay.stop();
    }
  });

  it("leaves another host's file while its process holds a hold, then writes it once", async () => {
    const t = await leftCharge(getDb(), 'other-host:4242:abc', 3_000n);
    try {
      await t.replay.pass();
      expect(await t.state()).toEqual({ state: 'held', charged: null });
      expect(readdirSync(t.dir)).toEqual(['other-host~4242~abc.jsonl']);

      t.clock.advance(HOLD_MS + 1); // its process stopped renewing the hold: it is gone
      await t.replay.pass();
      expect(await t.state()).toEqual({ state: 'settled', charged: '3000' });
      expect(readdirSync(t.dir)).toEqual([]);
      await t.replay.pass();
      expect((await t.ledger.balance(t.wallet.id)).availableNano).toBe(7_000n);
      await expectJournalAddsUp(getDb(), t.wallet.id);
    } finally {
      await t.replay.stop();
    }
  });

  it("writes a lost host's charges on a hold kept for them at once, then gives the hold back", async () => {
    // A lease whose process kept a draw on disk and marked it (its life then outlasts the process's): the replay
    // does not wait for it to lapse, and gives back what the lease held beyond the draw.
    const t = await keptLease(getDb());
    await t.replayedWhole(t.mine);
  });

  it("keeps a lost host's files until the hold kept for their charges is given back", async () => {
    // Removed first, a replay killed before giving the hold back left it marked with no file to replay: held, and
    // shown as held, until the sweeper's day.
    const t = await keptLease(getDb());
    const failing: Ledger = { ...t.mine, release: async () => Promise.reject(new Error('database down')) };
    const first = t.replayBy(failing);
    await first.pass();
    await first.stop();
    expect(readdirSync(t.dir)).toHaveLength(1);
    expect(await t.lease()).toMatchObject({ state: 'held' });
    await t.replayedWhole(t.mine);
  });

  it('writes a file copied into the folder later, at its next pass', async () => {
    const t = await leftCharge(getDb(), `${hostname()}:${DEAD_PID}:first`, 1_000n, 50);
    try {
      await t.replay.pass();
      const r = await t.theirs.reserve({
        walletId: t.wallet.id,
        vendor: 'b',
        amountNano: 2_000n,
        callId: 'call_late',
        expiresAt: t.expiresAt,
      });
      if (!r.ok) throw new Error('no hold');
      new ChargeSpool(t.dir, `lost-host:7:xyz`).keep({
        callId: 'call_late',
        kind: 'settle',
        reservationId: r.reservation.id,
        costNano: 1_500n,
      });
      t.clock.advance(HOLD_MS + 1);
      await expect.poll(() => readdirSync(t.dir).length, { timeout: 5_000 }).toBe(0);
      expect((await t.ledger.balance(t.wallet.id)).availableNano).toBe(7_500n);
      await expectJournalAddsUp(getDb(), t.wallet.id);
    } finally {
      await t.replay.stop();
    }
  });
});
