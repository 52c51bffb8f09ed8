// A usage record says which prices charged it: its `prices` recompute its `charged_nano` exactly from the record
// alone, for a base-priced call, a call above a tier's threshold, and after a price change by reload, which
// leaves the records of earlier calls as they were.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recomputedCharge, type UsageRecordView } from '../../engine/usage/records.ts';
import { signIn } from '../dashboard/owner-client.ts';
import { nano, PRICES, post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let t: TestGateway;
let tree: TempTree;
beforeAll(async () => {
  tree = tempCatalogTree();
  t = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog } });
});
afterAll(async () => {
  await t?.close();
  tree?.remove();
});

async function chargedCall(path: string, body: object): Promise<{ id: string; charged: bigint }> {
  const before = await t.balance();
  const res = await post(t, path, body);
  expect(res.status, await res.text()).toBe(200);
  for (let i = 0; i < 100 && (await t.held()) !== 0n; i++) await sleep(20);
  return { id: res.headers.get('x-request-id')!, charged: before - (await t.balance()) };
}

async function record(id: string): Promise<UsageRecordView> {
  const res = await fetch(`${t.url}/v1/generations/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${t.apiKey}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as UsageRecordView;
}

/** The record's charge, recomputed from nothing but the record (as a reviewer reads it from the API). */
function expectRecomputes(r: UsageRecordView, charged: bigint) {
  expect(r.charged_nano).toBe(charged.toString());
  expect(recomputedCharge(r)).toBe(charged);
}

const baseCall = {
  model: 'b-5',
  messages: [{ role: 'user', content: 'hello [[sim:usage input=1000 cache_read=200 output=300]]' }],
  max_completion_tokens: 2000,
};

describe('prices on usage records', () => {
  let first: { id: string; charged: bigint };

  it('a base-priced call: the base prices, and they give the charge', async () => {
    first = await chargedCall('/v1/chat/completions', baseCall);
    const P = PRICES['b-5'];
    expect(first.charged).toBe(nano(1000, P.input) + nano(200, P.cache_read) + nano(300, P.output));
    const r = await record(first.id);
    expect(r.prices).toEqual({ basis: 'base', input: 1.25, output: 10, cache_read: 0.125, cache_write: 1.25 });
    expectRecomputes(r, first.charged);
  });

  it('a call above the tier threshold: the tier and its prices, and they give the charge', async () => {
    const { id, charged } = await chargedCall('/v1/responses', {
      model: 'b-pro-5.4',
      input: 'Huge prompt [[sim:usage input=300000 output=10]]',
    });
    const P = PRICES['b-pro-5.4'];
    expect(charged).toBe(nano(300_000, P.tier.input) + nano(10, P.tier.output));
    const r = await record(id);
    expect(r.prices).toMatchObject({ basis: 'tier', tier_above_input_tokens: 272_000, input: 60, output: 270 });
    expectRecomputes(r, charged);
  });

  it('after a price change by reload: new calls at the new prices, the earlier record unchanged', async () => {
    const before = await record(first.id);
    tree.edit('catalog/vendor-b.yaml', (y) =>
      y.replace('pricing: { input: 1.25, output: 10, cache_read: 0.125 }', 'pricing: { input: 2.5, output: 20, cache_read: 0.25 }'),
    );
    const reload = await fetch(`${t.url}/admin/v1/reload`, { method: 'POST', headers: { authorization: 'Bearer test-admin-token' } });
    expect(reload.status).toBe(200);

    const after = await chargedCall('/v1/chat/completions', baseCall);
    expect(after.charged).toBe(nano(1000, 2.5) + nano(200, 0.25) + nano(300, 20));
    const r = await record(after.id);
    expect(r.prices).toEqual({ basis: 'base', input: 2.5, output: 20, cache_read: 0.25, cache_write: 2.5 });
    expectRecomputes(r, after.charged);

    const again = await record(first.id);
    expect(again).toEqual(before);
    expectRecomputes(again, first.charged);
  });

  it('the dashboard call detail shows the prices and the charge they give', async () => {
    const owner = await signIn(t, t.walletId);
    const res = await owner.get(`/dashboard/usage/${encodeURIComponent(first.id)}`);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('data-basis="base"');
    expect(page).toContain('Input: $1.25 per 1M tokens');
    expect(page).toContain(`data-testid="recomputed" data-nano="${first.charged}"`);
  });
});
