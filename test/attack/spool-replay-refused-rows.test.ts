// A charge kept in the spool with rows the database refuses for good. The live process steps down to fewer rows;
// the replay of a killed process's spool must too, and one refused charge must not keep the others in its file
// from being written. A process answers streams while usage_records is locked (their charges fail and are kept on
// disk with their full rows); one call's usage record is refused for good (a CHECK the test adds: request ids
// `poison…`). The process is SIGKILLed, the lock goes, and the next process on the folder replays: every answer
// received in full is charged, the poisoned one with fewer rows, and the spool file is gone.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { expectJournalAddsUp, journalSum } from '../helpers/ledger.ts';
import { post, spoolGateways, spoolTestsRun } from '../helpers/spool-gateways.ts';

const g = spoolGateways();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const leases of [true, false]) {
  describe.skipIf(!spoolTestsRun)(
    `a kept charge whose rows are refused for good, replayed [postgres, leases ${leases ? 'on' : 'off'}]`,
    () => {
      it('every whole answer is charged after the replay', async () => {
        const dataDir = g.dataDir('gw-poison-spool-');
        const first = await g.launch(dataDir, leases);
        const { walletId, apiKey } = await g.walletWithKey(first.base);
        await g
          .pgs()
          .db.query(
            `ALTER TABLE usage_records ADD CONSTRAINT attack_poison_${leases ? 'on' : 'off'} CHECK (request_id NOT LIKE 'poison%')`,
          );

        const locker = new pg.Client({ connectionString: g.pgs().url });
        await locker.connect();
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE usage_records IN SHARE MODE');
        const run = `p${Date.now()}`;
        const ids = [`poison-${run}`, `${run}-1`, `${run}-2`, `${run}-3`];
        const texts = await Promise.all(
          ids.map(async (id, i) => {
            // The poisoned call ends first, so its charge is kept first.
            const body = {
              model: 'b-5',
              stream: true,
              max_completion_tokens: 500,
              messages: [{ role: 'user', content: `go [[sim:long=${i === 0 ? 5 : 40}]]` }],
            };
            const r = await post(first.base, '/v1/chat/completions', apiKey, body, id);
            return { id, text: r.status === 200 ? await r.text() : '' };
          }),
        );
        const whole = texts.filter((t) => /data: \[DONE\]\s*$/.test(t.text)).map((t) => t.id);
        const spool = join(dataDir, 'charges');
        const kept = existsSync(spool) ? readdirSync(spool).map((f) => readFileSync(join(spool, f), 'utf8')) : [];
        first.child.kill('SIGKILL');
        await first.exited;
        await locker.query('ROLLBACK');
        await locker.end();

        const second = await g.launch(dataDir, leases);
        await second.waitFor(/charges left by a stopped process/, 15_000).catch(() => undefined);
        await sleep(1_000);
        const recs = await g
          .pgs()
          .db.query<{ request_id: string }>('SELECT request_id FROM usage_records WHERE wallet_id = $1', [walletId]);
        const draws = await g
          .pgs()
          .db.query<{ draw_id: string }>(
            `SELECT d.draw_id FROM reservation_draws d JOIN reservations r ON r.id = d.reservation_id WHERE r.wallet_id = $1`,
            [walletId],
          );
        const sum = await journalSum(g.pgs().db, walletId);
        const recorded = new Set(recs.rows.map((r) => r.request_id));
        const info = {
          leases,
          whole,
          keptLines: kept.map((t) => t.trim().split('\n').length),
          records: [...recorded],
          drawRows: draws.rows.length,
          journalCharged: String(sum.chargedNano),
          spoolAfter: existsSync(spool) ? readdirSync(spool) : [],
          log: second.out.text
            .split('\n')
            .filter((l) => /stopped process|refused/.test(l))
            .map((l) => l.slice(0, 300))
            .slice(0, 4),
        };
        expect(kept.length, 'the charges were kept on disk').toBeGreaterThan(0);
        const goodUncharged = whole.filter((id) => !id.startsWith('poison') && !recorded.has(id));
        expect(goodUncharged, `good whole answers without a record after the replay: ${JSON.stringify(info)}`).toEqual([]);
        expect(info.spoolAfter, 'the replayed spool file is gone').toEqual([]);
        // The poisoned call: charged with fewer rows (leases: a draw row), as the live process would have.
        if (whole.includes(ids[0]!) && leases) expect(draws.rows.length, 'the poisoned draw charged with fewer rows').toBe(1);
        await expectJournalAddsUp(g.pgs().db, walletId);
      }, 120_000);
    },
  );
}
