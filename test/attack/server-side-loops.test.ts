// Attack (issue 8 sign-off), not fixed: on /v1/messages a server tool makes the vendor run more model passes
// than the body shows, and the hold (engine/catalog/text-bounds.ts) counts none of them. A small wallet that
// covers the hold gets the extra passes charged only as far as its balance goes; the rest is the gateway's loss.
// The bundled simulator runs neither an advisor nor search content into the prompt, so these assert the hold
// (a 402 before the vendor is called), the one place the gateway can still refuse the work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A_VERSION, post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

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
  // billed at that model's price (usage.iterations advisor_message, charged by transforms/protocols/messages/messages-usage.ts).
  // The hold prices only the executor (a-small-4.5 at $0.25/$1.25): about $0.0008 here, where one advisor pass
  // over the same ~2,900 input tokens is ~$0.044 before its output, and the advisor's uses are uncapped
  // (cap-server-tools writes max_uses only on web and file search). Also: an advisor model the catalog does not
  // know is priced at the executor's price (engine/catalog/usage-cost.ts costOfUsage, `?? model`).
  it('an advisor tool naming a dearer model: 402 on a wallet that covers only the executor', async () => {
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

  // Web search results enter the prompt as input tokens at a size the body does not show: each search the hold
  // allows holds reservation.search_result_tokens (20,000) of input besides its $0.01 fee. On a-top-5.5 ($5 per
  // 1M input) one search holds $0.11 with its results; the fee and the body alone were $0.0105.
  it('a web search call: its results are held as input (402 on $0.02 for a-top-5.5 with one search)', async () => {
    const sent = t.sim.received.length;
    const res = await post(
      t,
      '/v1/messages',
      { model: 'a-top-5.5', max_tokens: 16, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }], messages: [ask] },
      A_VERSION,
    );
    expect(res.status, await res.text()).toBe(402);
    expect(t.sim.received.length).toBe(sent);
  });

  // Checked as the call's own model is (engine/calls/model-fields.ts): 404 model_not_found, with the nearest id.
  it('an advisor naming a model the catalog does not have: 404 naming the field, nothing sent', async () => {
    const sent = t.sim.received.length;
    const res = await post(
      t,
      '/v1/messages',
      {
        model: 'a-small-4.5',
        max_tokens: 16,
        tools: [{ type: 'advisor_20260301', name: 'advisor', model: 'no-such-model' }],
        messages: [ask],
      },
      A_VERSION,
    );
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.error.type).toBe('model_not_found');
    expect(body.error.message).toMatch(/tools\[0\]\.model/);
    expect(t.sim.received.length).toBe(sent);
  });

  it('an advisor without a cap is sent capped (max_uses), and served when the wallet covers its passes', async () => {
    const wallet = await t.gw.ledger.createWallet({ credits: 100_000_000 });
    const { key } = await t.gw.keys.createApiKey(wallet.id, { name: 'rich' });
    const res = await fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', ...A_VERSION },
      body: JSON.stringify({
        model: 'a-small-4.5',
        max_tokens: 16,
        tools: [{ type: 'advisor_20260301', name: 'advisor', model: 'a-top-5' }],
        messages: [ask],
      }),
    });
    expect(res.status, await res.text()).toBe(200);
    const last = t.sim.received[t.sim.received.length - 1]!.body as { tools: { max_uses?: number }[] };
    expect(last.tools[0]!.max_uses).toBe(10);
  });
});
