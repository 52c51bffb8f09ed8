// The spool of charges the database has not taken: what is kept comes back whole (bigints, instants, its rows'
// writers), a landed charge is not written again, a live process's file (its pid answers and it holds a hold) is
// left alone, a reused pid's is not, and a file goes once done.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChargeRowWriter, chargeRow } from '../../engine/db/charge-rows.ts';
import { type ChargeIntent, ChargeSpool, drawIntent } from '../../engine/money/charge-spool.ts';

const writer: ChargeRowWriter<unknown> = { name: 'usage_records', statement: () => null };
const dirs: string[] = [];
const folder = () => {
  const d = mkdtempSync(join(tmpdir(), 'spool-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A pid no process has: far above Linux's pid_max. */
const DEAD_PID = 99_999_999;

describe('the charge spool', () => {
  it("gives a dead process's waiting charges back whole, not the landed ones, and removes its file", async () => {
    const dir = folder();
    const dead = new ChargeSpool(dir, `${hostname()}:${DEAD_PID}:abc`);
    const at = new Date('2026-11-29T01:02:03.456Z');
    const rows = [chargeRow(writer, { requestId: 'req_1', at, tokens: 12n })];
    dead.keep(drawIntent('res_lease', 1_234_567_890_123n, 'call_1', rows, 5n));
    dead.keep({ callId: 'call_2', kind: 'settle', reservationId: 'res_2', costNano: 7n });
    dead.keep({ callId: 'call_3', kind: 'settle', reservationId: 'res_3', costNano: 9n });
    dead.landed('call_2');

    const replayed: ChargeIntent[] = [];
    const me = new ChargeSpool(dir, `${hostname()}:${process.pid}:me`);
    expect(await me.replay([writer], async (i) => void replayed.push(i))).toBe(2);
    expect(replayed.map((i) => i.callId)).toEqual(['call_1', 'call_3']);
    expect(replayed[0]).toMatchObject({
      kind: 'draw',
      reservationId: 'res_lease',
      costNano: 1_234_567_890_123n,
      drawId: 'call_1',
      holdAtMostNano: 5n,
    });
    expect(replayed[0]!.rows).toEqual([{ writer, item: { requestId: 'req_1', at, tokens: 12n } }]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("leaves a live process's file and its own alone, and keeps a file whose charge could not be written", async () => {
    const dir = folder();
    const live = new ChargeSpool(dir, `${hostname()}:${process.ppid}:live`);
    live.keep({ callId: 'live_1', kind: 'settle', reservationId: 'res_l', costNano: 1n });
    const me = new ChargeSpool(dir, `${hostname()}:${process.pid}:me`);
    me.keep({ callId: 'mine_1', kind: 'settle', reservationId: 'res_m', costNano: 1n });
    writeFileSync(
      join(dir, `${hostname()}~${DEAD_PID}~x.jsonl`),
      `${JSON.stringify({ callId: 'dead_1', kind: 'settle', reservationId: 'r', costNano: { $bigint: '3' } })}\n{"callId": "cut`,
    );
    const holding = async () => new Set([`${hostname()}~${process.ppid}~live`]);
    await expect(me.replay([writer], async () => Promise.reject(new Error('database down')), holding)).rejects.toThrow('database down');
    expect(readdirSync(dir)).toHaveLength(3);
    const seen: string[] = [];
    expect(await me.replay([writer], async (i) => void seen.push(i.callId), holding)).toBe(1);
    expect(seen).toEqual(['dead_1']); // the line cut by the kill was never kept
    expect(readdirSync(dir)).toHaveLength(2);
    me.landed('mine_1');
    live.landed('live_1');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('writes the file of a pid that answers but holds no hold: the pid was reused, its gateway is gone', async () => {
    const dir = folder();
    const reused = new ChargeSpool(dir, `${hostname()}:${process.ppid}:gone`);
    reused.keep({ callId: 'reused_1', kind: 'settle', reservationId: 'res_r', costNano: 4n });
    const me = new ChargeSpool(dir, `${hostname()}:${process.pid}:me`);
    const seen: string[] = [];
    expect(
      await me.replay(
        [writer],
        async (i) => void seen.push(i.callId),
        async () => new Set(['elsewhere~1~x']),
      ),
    ).toBe(1);
    expect(seen).toEqual(['reused_1']);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("keeps a live process's next charges though another process took its file for a dead one's", async () => {
    const dir = folder();
    const live = new ChargeSpool(dir, 'frozen-host:4242:live'); // its holds lapsed while it was stopped: judged dead
    live.keep({ callId: 'kept_1', kind: 'settle', reservationId: 'res_1', costNano: 1n });
    const other = new ChargeSpool(dir, `${hostname()}:${process.pid}:other`);
    const byOther: string[] = [];
    expect(await other.replay([writer], async (i) => void byOther.push(i.callId))).toBe(1);
    expect(byOther).toEqual(['kept_1']);

    live.keep({ callId: 'kept_2', kind: 'settle', reservationId: 'res_2', costNano: 2n }); // then it is killed
    const next = new ChargeSpool(dir, `${hostname()}:${DEAD_PID + 1}:next`);
    const byNext: string[] = [];
    expect(await next.replay([writer], async (i) => void byNext.push(i.callId))).toBe(1);
    expect(byNext).toEqual(['kept_2']);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('leaves its own file that a failed replay took to its writer, and removes it once nothing waits', async () => {
    const dir = folder();
    const mine = new ChargeSpool(dir, `${hostname()}:${process.pid}:mine`);
    mine.keep({ callId: 'own_1', kind: 'settle', reservationId: 'res_o', costNano: 1n });
    const other = new ChargeSpool(dir, 'elsewhere:9:other');
    await expect(other.replay([writer], async () => Promise.reject(new Error('database down')))).rejects.toThrow('database down');
    expect(readdirSync(dir)).toEqual([expect.stringMatching(new RegExp(`^${hostname()}~${process.pid}~mine~taken-[0-9a-f]+\\.jsonl$`))]);
    const byMine: string[] = [];
    expect(await mine.replay([writer], async (i) => void byMine.push(i.callId))).toBe(0);
    mine.landed('own_1');
    expect(readdirSync(dir)).toEqual([]);
  });
});
