// The per-call time limit (config/limits.yaml) holds for plain calls and streams: the client gets 502
// upstream_error in time and nothing stays held.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';
import { post } from './e2e.ts';

let tree: TempTree;
let t: TestGateway;
beforeAll(async () => {
  tree = tempCatalogTree();
  tree.edit('config/limits.yaml', (text) => text.replace(/ {2}chat: 300000/, '  chat: 700'));
  t = await startTestGateway({ dirs: tree, routesPerVendor: 1, simulator: { streamChunkDelayMs: 20 } });
  // One short stream first, its answer ignored: what a process pays once (the tokenizer's load, the translation's
  // first run) must not count against the tests' 700 ms on a loaded machine, where it alone came near it.
  const warm = await post(t, '/v1/chat/completions', { model: 'a-top-5.5', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  await warm.text();
});
afterAll(async () => {
  await t?.close();
  tree?.remove();
});

describe('per-call time limit', () => {
  it('a vendor slower than the limit gives 502 within the limit; the hold is released', async () => {
    const before = await t.balance();
    t.sim.inject('a0', { kind: 'delay', ms: 3000 });
    const started = Date.now();
    const res = await post(t, '/v1/chat/completions', { model: 'a-top-5.5', messages: [{ role: 'user', content: 'slow' }] });
    const took = Date.now() - started;
    expect(res.status).toBe(502);
    expect(((await res.json()) as any).error.type).toBe('upstream_error');
    expect(took).toBeLessThan(2500);
    expect(await t.balance()).toBe(before);
    expect(await t.held()).toBe(0n);
  });

  it('a stream that outlives the limit is ended and charged for what was produced', async () => {
    const before = await t.balance();
    const res = await post(t, '/v1/chat/completions', {
      model: 'a-top-5.5',
      stream: true,
      messages: [{ role: 'user', content: 'long [[sim:long=200]]' }],
    });
    expect(res.status).toBe(200);
    const started = Date.now();
    const text = await res.text(); // the gateway ends the stream when the limit passes
    expect(text).toContain('chat.completion.chunk');
    expect(text).not.toContain('[DONE]');
    expect(Date.now() - started).toBeLessThan(5000);
    await new Promise((r) => setTimeout(r, 200));
    expect(await t.balance()).toBeLessThan(before);
    expect(await t.held()).toBe(0n);
  });
});
