// Attack (wt-moneyattack): the charge spool replayed for charges that already landed. A process answers streams
// while the database is slow (their charges at risk, kept in GATEWAY_DATA_DIR/charges), the charges then land, and
// the process is SIGKILLed before its spool says so (the window between a commit and the spool's `landed` line:
// simulated by putting the spool file, copied while the charges were at risk, back after the kill). The next
// process on the folder writes every kept charge again; each is keyed by its id (a draw by its call's, a settle
// by its reservation's), so the wallet must not be charged twice: one usage record per call, what left the wallet
// is their sum, the journal adds up. PostgreSQL, real processes, leases on and off.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { spendableOf } from '../../engine/money/spendable.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { post as call, spoolGateways, spoolTestsRun } from '../helpers/spool-gateways.ts';

const g = spoolGateways();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const leases of process.env.PROBE_LEASES ? [process.env.PROBE_LEASES === 'on'] : [true, false]) {
  describe.skipIf(!spoolTestsRun)(`spool replayed after its charges landed [postgres, leases ${leases ? 'on' : 'off'}]`, () => {
    it('charges nothing twice', async () => {
      const dataDir = g.dataDir('gw-spool-twice-');
      const first = await g.launch(dataDir, leases);
      const { walletId, apiKey } = await g.walletWithKey(first.base);

      const locker = new pg.Client({ connectionString: g.pgs().url });
      await locker.connect();
      await locker.query('BEGIN');
      // Charges wait (their usage records cannot be inserted); holds and leases can still be written.
      await locker.query('LOCK TABLE usage_records IN SHARE MODE');
      const body = { model: 'b-5', stream: true, max_completion_tokens: 500, messages: [{ role: 'user', content: 'go [[sim:long=40]]' }] };
      const texts = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const r = await call(first.base, '/v1/chat/completions', apiKey, body);
          return r.status === 200 ? r.text() : '';
        }),
      );
      const whole = texts.filter((t) => /data: \[DONE\]\s*$/.test(t)).length;
      const spool = join(dataDir, 'charges');
      const copied = existsSync(spool) ? readdirSync(spool).map((f) => [f, readFileSync(join(spool, f), 'utf8')] as const) : [];
      await locker.query('ROLLBACK');
      await locker.end();

      const count = async () =>
        (await g.pgs().db.query<{ n: number }>('SELECT count(*)::int AS n FROM usage_records WHERE wallet_id = $1', [walletId])).rows[0]!.n;
      const until = Date.now() + 20_000;
      while (Date.now() < until && (await count()) < 1 + whole) await sleep(100);
      await sleep(300);
      first.child.kill('SIGKILL');
      await first.exited;
      // The views' balance: the dead process's lease is still held, and its lots pay what its records owe at its end.
      const view = () => spendableOf(g.pgs().db, walletId, systemClock.now());
      const before = await view();
      // The kill came before the spool said the charges landed.
      mkdirSync(spool, { recursive: true });
      for (const [f, text] of copied) writeFileSync(join(spool, f), text);

      const second = await g.launch(dataDir, leases);
      await second.waitFor(/charges left by a stopped process/, 20_000).catch(() => undefined);
      await sleep(500);
      const after = await view();
      const recs = await g
        .pgs()
        .db.query<{ n: number; s: string }>(
          'SELECT count(*)::int AS n, coalesce(sum(charged_nano),0)::text AS s FROM usage_records WHERE wallet_id = $1',
          [walletId],
        );
      const spent = 10_000_000n * 1000n - after.availableNano - after.reservedNano;
      console.log({
        leases,
        whole,
        keptLines: copied.map(([, t]) => t.trim().split('\n').length),
        records: recs.rows[0]!.n,
        charged: recs.rows[0]!.s,
        spent: String(spent),
        movedByReplay: String(before.availableNano + before.reservedNano - after.availableNano - after.reservedNano),
        log: second.out.text
          .split('\n')
          .filter((l) => /stopped process/.test(l))
          .map((l) => l.slice(0, 240)),
      });
      expect(whole).toBeGreaterThan(0);
      expect(copied.length, 'the charges at risk were kept on disk').toBeGreaterThan(0);
      expect(recs.rows[0]!.n).toBe(1 + whole);
      expect(spent).toBe(BigInt(recs.rows[0]!.s));
      expect(after.availableNano + after.reservedNano).toBe(before.availableNano + before.reservedNano);
      await expectJournalAddsUp(g.pgs().db, walletId);
    }, 120_000);
  });
}
