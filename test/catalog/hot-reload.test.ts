import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree;
let t: TestGateway;
beforeAll(async () => {
  tree = tempCatalogTree();
  t = await startTestGateway({ dirs: tree });
});
afterAll(async () => {
  await t?.close();
  tree?.remove();
});

const reload = () => fetch(`${t.url}/admin/v1/reload`, { method: 'POST', headers: { authorization: 'Bearer test-admin-token' } });

// 1000 uncached input tokens and 100 output tokens, as the simulator reports them.
const USAGE_TAG = '[[sim:usage input=1000 output=100]]';
async function chargedFor(model: string): Promise<bigint> {
  const before = await t.balance();
  const res = await fetch(`${t.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: USAGE_TAG }] }),
  });
  expect(res.status).toBe(200);
  await res.json();
  return before - (await t.balance());
}

describe('hot reload', () => {
  it('a price change applies to the next call; a broken file leaves the old catalog serving', async () => {
    // d-3 is priced in catalog/vendor-d.yaml; read its current price from the gateway.
    const price = (await (await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json()) as any;
    const d3 = price.data.find((m: any) => m.id === 'd-3').pricing;
    const cost = (input: number, output: number) => BigInt(Math.round((1000 * input + 100 * output) * 1000));
    expect(await chargedFor('d-3')).toBe(cost(d3.input_per_mtok, d3.output_per_mtok));

    tree.edit('catalog/vendor-d.yaml', (text) => text.replace(/(d-3:\n(?:.*\n)*?\s+pricing:[^\n]*?input: )[\d.]+/, '$1 7'));
    const ok = await reload();
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ ok: true });
    expect(await chargedFor('d-3')).toBe(cost(7, d3.output_per_mtok));

    tree.edit('catalog/vendor-d.yaml', (text) => text.replace('kind: text', 'kind: txet'));
    const bad = await reload();
    expect(bad.status).toBe(400);
    const result = (await bad.json()) as { ok: boolean; problems: string[] };
    expect(result.ok).toBe(false);
    expect(result.problems.join('\n')).toMatch(/vendor-d\.yaml:\d+: .*kind/);
    expect(await chargedFor('d-3')).toBe(cost(7, d3.output_per_mtok));
  });

  it('a reload does not drop a call in flight', async () => {
    t.sim.inject('a0', { kind: 'delay', ms: 600 });
    const inFlight = fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'a-top-5.5', messages: [{ role: 'user', content: 'slow one' }] }),
    });
    await new Promise((r) => setTimeout(r, 150));
    tree.edit('catalog/vendor-d.yaml', (text) => text.replace('kind: txet', 'kind: text'));
    expect((await reload()).status).toBe(200);
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).choices[0].message.content).toContain('slow one');
  });

  it('the reload door needs the admin token', async () => {
    const res = await fetch(`${t.url}/admin/v1/reload`, { method: 'POST', headers: { authorization: 'Bearer nope' } });
    expect(res.status).toBe(401);
  });
});
