// Attack (wt-attack): on a leased gateway (PGlite, leases on as shipped), clients leave at every step while
// others report usage far above their holds, all at once. Afterwards: every call the vendor served is charged
// once (one usage record per served call, distinct draw ids), the wallet fell by exactly what the usage records
// charged, nothing stays held, and the journal adds up.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import type { TestGateway } from '../helpers/gateway.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const gateway = useLeasedGateway('pglite', 20_000_000); // $20: covers every call, above its hold or not

const chatBody = (tag: string, extra = '', more: Record<string, unknown> = {}) => ({
  model: 'b-6',
  max_completion_tokens: 400,
  messages: [{ role: 'user', content: `hello [[sim:call=${tag}]] ${extra}` }],
  ...more,
});

/** Sends the head and part of the body, then leaves. */
function partialBody(t: TestGateway, tag: string): Promise<void> {
  const u = new URL(t.url);
  const body = JSON.stringify(chatBody(tag));
  return new Promise((resolve) => {
    const s = net.connect(Number(u.port), u.hostname, () => {
      s.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${t.apiKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, body.length - 5)}`,
      );
      setTimeout(() => {
        s.destroy();
        resolve();
      }, 50);
    });
    s.on('error', () => resolve());
  });
}

/** Sends the whole body and leaves before any answer. */
async function leaveAfterBody(t: TestGateway, tag: string, stream: boolean): Promise<void> {
  const ac = new AbortController();
  const p = post(t, '/v1/chat/completions', chatBody(tag, '[[sim:long=200]]', stream ? { stream: true } : {}), {}, ac.signal).catch(
    () => undefined,
  );
  await sleep(5);
  ac.abort();
  await p;
}

/** Streams, reads the first chunk, and leaves. */
async function leaveMidStream(t: TestGateway, tag: string, above: boolean): Promise<void> {
  const ac = new AbortController();
  try {
    const res = await post(
      t,
      '/v1/chat/completions',
      chatBody(tag, `[[sim:long=300]]${above ? ' [[sim:usage input=20 output=20000]]' : ''}`, { stream: true }),
      {},
      ac.signal,
    );
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
  } catch {
    /* aborted */
  }
}

async function whole(t: TestGateway, tag: string, above: boolean, stream: boolean): Promise<number> {
  const res = await post(
    t,
    '/v1/chat/completions',
    chatBody(tag, above ? '[[sim:usage input=20 output=20000]]' : '', stream ? { stream: true } : {}),
  );
  await res.text();
  return res.status;
}

describe('clients leaving at every step, usage above the hold, one leased gateway', () => {
  it('every served call charged once, nothing held, the journal adds up', async () => {
    const t = gateway();
    const before = await t.balance();
    const run = `r${Date.now()}`;
    const jobs: Promise<unknown>[] = [];
    for (let i = 0; i < 6; i++) {
      jobs.push(whole(t, `${run}-w${i}`, false, i % 2 === 0));
      jobs.push(whole(t, `${run}-a${i}`, true, i % 2 === 0));
      jobs.push(leaveMidStream(t, `${run}-m${i}`, i % 2 === 0));
      jobs.push(leaveAfterBody(t, `${run}-b${i}`, i % 2 === 0));
      jobs.push(partialBody(t, `${run}-p${i}`));
    }
    await Promise.all(jobs);
    await t.sim.outcomesSettled(20_000).catch(() => undefined);
    // Leases told every 250 ms; calls left by their clients run on at the vendor to their end.
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && (await t.held()) !== 0n) await sleep(100);
    await t.gw.leases.flushed();
    expect(await t.held()).toBe(0n);

    const served = t.sim.received.filter((r) => JSON.stringify(r.body).includes(run)).length;
    const recs = await t.gw.db.query<{ n: string; charged: string; ids: string; dup: string }>(
      `SELECT count(*)::text AS n, coalesce(sum(charged_nano),0)::text AS charged,
              count(DISTINCT transfer_id)::text AS ids, (count(*) - count(DISTINCT request_id))::text AS dup
         FROM usage_records WHERE wallet_id = $1`,
      [t.walletId],
    );
    const r = recs.rows[0]!;
    const after = await t.balance();
    console.log({ served, records: r, spent: String(before - after) });
    // No partial body reached the vendor; every call that got an answer's head did; one that left right after its
    // body may have been dropped before the vendor was called (documented: not served, its hold goes back).
    const tags = t.sim.received.map((x) => JSON.stringify(x.body)).filter((b) => b.includes(run));
    expect(tags.filter((b) => b.includes(`${run}-p`))).toEqual([]);
    for (const kind of ['w', 'a', 'm']) expect(tags.filter((b) => b.includes(`${run}-${kind}`)).length, kind).toBe(6);
    // Each record charged exactly its usage at b-6's prices ($5 / $30 / $0.5 cached per 1M): above the hold too.
    const wrong = await t.gw.db.query(
      `SELECT request_id, input_tokens, output_tokens, cache_read_tokens, charged_nano FROM usage_records
        WHERE wallet_id = $1 AND charged_nano <> input_tokens * 5000 + output_tokens * 30000 + cache_read_tokens * 500`,
      [t.walletId],
    );
    expect(wrong.rows).toEqual([]);
    const draws = await t.gw.db.query(`SELECT count(*)::int AS n FROM reservation_draws`);
    console.log('draw rows', draws.rows);
    expect(Number(r.n)).toBe(served);
    expect(Number(r.ids)).toBe(served);
    expect(BigInt(r.charged)).toBe(before - after);
    await expectJournalAddsUp(t.gw.db, t.walletId);
  }, 90_000);
});
