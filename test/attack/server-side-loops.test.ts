// Attack (issue 8 sign-off), not fixed: on /v1/messages a server tool makes the vendor run more model passes
// than the body shows, and the hold (engine/catalog/text-bounds.ts) counts none of them. A small wallet that
// covers the hold gets the extra passes charged only as far as its balance goes; the rest is the gateway's loss.
// The bundled simulator runs neither an advisor nor search content into the prompt, so these assert the hold
// (a 402 before the vendor is called), the one place the gateway can still refuse the work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { A_VERSION, post } from '../e2e/e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ credits: 20_000 }); // $0.02
});
afterAll(() => t?.close());

const ask = { role: 'user', content: 'plan this' };

describe('server-side passes are held before the call', () => {
  it('control: the same cheap executor call without server tools is served on $0.02', async () => {
    const res = await post(t, '/v1/messages', { model: 'a-small-4.5', max_tokens: 16, messages: [ask] }, A_VERSION);
    expect(res.status, await res.text()).toBe(200);
  });

  // The advisor tool runs another model (here a-top-5 at $15/$75 per 1M) over the whole transcript at each use,
  // billed at that model's price (usage.iterations advisor_message, charged by transforms/usage/messages-usage.ts).
  // The hold prices only the executor (a-small-4.5 at $0.25/$1.25): about $0.0008 here, where one advisor pass
  // over the same ~2,900 input tokens is ~$0.044 before its output, and the advisor's uses are uncapped
  // (cap-server-tools writes max_uses only on web and file search). Also: an advisor model the catalog does not
  // know is priced at the executor's price (engine/catalog/pricing.ts costOfUsage, `?? model`).
  it.fails('an advisor tool naming a dearer model: 402 on a wallet that covers only the executor', async () => {
    const sent = t.sim.received.length;
    const before = await t.balance();
    const res = await post(
      t,
      '/v1/messages',
      { model: 'a-small-4.5', max_tokens: 16, tools: [{ type: 'advisor_20260301', name: 'advisor', model: 'a-top-5' }], messages: [ask] },
      { ...A_VERSION, 'anthropic-beta': 'advisor-tool-2026-03-01' },
    );
    expect(res.status, await res.text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
    expect(await t.balance()).toBe(before);
  });

  // Web search results enter the prompt as input tokens (each search's pages, then every later pass of the
  // server-side loop re-reads them), at a size the body does not show, like a fetched page (held at the context
  // window since the fetched-content fix). Only the per-search fee is held: $0.0107 here for one search, where
  // a few result pages of ~10K tokens each already pass the $0.02 balance on a-top models.
  it.fails('a web search call: its results are held as input (402 on $0.02 for a-small-4.5 with one search)', async () => {
    const sent = t.sim.received.length;
    const res = await post(
      t,
      '/v1/messages',
      { model: 'a-small-4.5', max_tokens: 16, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }], messages: [ask] },
      A_VERSION,
    );
    expect(res.status, await res.text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
  });
});
