// Attack (wt-attack): a streaming client leaves after its first chunk, on each text door, while the vendor
// reports usage far above the hold at its stream's end. Leased gateway (PGlite). The call must be settled from the
// vendor's usage, in full (the wallet covers it), once; nothing stays held.
import { describe, expect, it } from 'vitest';
import { A_VERSION, post, sleep } from '../e2e/e2e.ts';
import { useLeasedGateway } from '../helpers/leased-gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const gateway = useLeasedGateway('pglite', 20_000_000);

const doors = [
  {
    name: 'chat b-6',
    path: '/v1/chat/completions',
    headers: {},
    body: (tag: string) => ({ model: 'b-6', max_completion_tokens: 300, stream: true, messages: [{ role: 'user', content: tag }] }),
    price: { input: 5_000n, output: 30_000n },
  },
  {
    name: 'chat a-top-5.5 (translated)',
    path: '/v1/chat/completions',
    headers: {},
    body: (tag: string) => ({ model: 'a-top-5.5', max_tokens: 300, stream: true, messages: [{ role: 'user', content: tag }] }),
    price: { input: 5_000n, output: 25_000n },
  },
  {
    name: 'messages a-top-5.5',
    path: '/v1/messages',
    headers: A_VERSION,
    body: (tag: string) => ({ model: 'a-top-5.5', max_tokens: 300, stream: true, messages: [{ role: 'user', content: tag }] }),
    price: { input: 5_000n, output: 25_000n },
  },
  {
    name: 'responses b-6',
    path: '/v1/responses',
    headers: {},
    body: (tag: string) => ({ model: 'b-6', max_output_tokens: 300, stream: true, input: tag }),
    price: { input: 5_000n, output: 30_000n },
  },
];

describe('a streaming client leaves after its first chunk; usage far above the hold', () => {
  for (const d of doors) {
    it(d.name, async () => {
      const t = gateway();
      const id = `leave-${d.name.replace(/\W+/g, '-')}-${Date.now()}`;
      const before = await t.balance();
      const ac = new AbortController();
      const res = await post(
        t,
        d.path,
        d.body(`go [[sim:long=200]] [[sim:usage input=40 output=20000]]`),
        { ...d.headers, 'x-request-id': id },
        ac.signal,
      );
      expect(res.status).toBe(200);
      await res.body!.getReader().read();
      ac.abort();
      const until = Date.now() + 15_000;
      let rec: any;
      while (Date.now() < until) {
        await t.gw.leases.flushed();
        rec = (
          await t.gw.db.query(`SELECT charged_nano::text AS c, input_tokens, output_tokens FROM usage_records WHERE request_id = $1`, [id])
        ).rows;
        if (rec.length > 0 && (await t.held()) === 0n) break;
        await sleep(100);
      }
      const spent = before - (await t.balance());
      console.log(d.name, JSON.stringify(rec), 'spent', String(spent));
      expect(rec.length).toBe(1);
      expect(BigInt(rec[0].c)).toBe(40n * d.price.input + 20_000n * d.price.output);
      expect(spent).toBe(BigInt(rec[0].c));
      expect(await t.held()).toBe(0n);
      await expectJournalAddsUp(t.gw.db, t.walletId);
    }, 30_000);
  }
});
