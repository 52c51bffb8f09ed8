// Vendors are YAML keys (config/vendors.yaml), not code: a vendor `f` added to a copy of config/ and catalog/
// (its vendors.yaml entry, its framing, a door serving it and one catalog model) loads, is listed by
// GET /v1/models, and its calls go to the routes GATEWAY_VENDOR_F_URLS gives, with GATEWAY_VENDOR_F_KEY.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const MODEL_F = `# Vendor F: a vendor added by YAML alone.
vendor: f
models:
  f-chat-1:
    kind: text
    context_window: 32768
    max_output: 4096
    pricing: { input: 1, output: 2 }
    effort_levels: null
    rules: []
    sale_ends: null
    successor: null
    source: spec
`;

/** A copy of config/ and catalog/ with vendor f and its model f-chat-1. */
function treeWithVendorF(): TempTree {
  const tree = tempCatalogTree();
  tree.edit('config/vendors.yaml', (t) => `${t}f:\n  name: Vendor F\n  credential: { header: authorization, scheme: Bearer }\n`);
  tree.edit('config/billing.yaml', (t) =>
    t
      .replace('framing_per_call: { a: 16, b: 16, c: 16, d: 16, e: 64 }', 'framing_per_call: { a: 16, b: 16, c: 16, d: 16, e: 64, f: 16 }')
      .replace('framing_per_message: { a: 8, b: 8, c: 8, d: 8, e: 8 }', 'framing_per_message: { a: 8, b: 8, c: 8, d: 8, e: 8, f: 8 }'),
  );
  tree.edit('config/doors.yaml', (t) =>
    t.replace('serves: { kinds: [text], vendors: [a, b, c, d, e] }', 'serves: { kinds: [text], vendors: [a, b, c, d, e, f] }'),
  );
  writeFileSync(join(tree.catalog, 'vendor-f.yaml'), MODEL_F);
  return tree;
}

let tree: TempTree;
let t: TestGateway;

beforeAll(async () => {
  tree = treeWithVendorF();
  // Every vendor of the folder's vendors.yaml gets routes on the test simulator (f0, f1), f's key vendor-f-secret.
  t = await startTestGateway({ dirs: tree });
});
afterAll(async () => {
  await t?.close();
  tree?.remove();
});

describe('a vendor added by YAML alone', () => {
  it('loads: the catalog and config check out, the model served by the chat door', () => {
    const snap = loadSnapshot(tree, 1);
    expect(Object.keys(snap.config.vendors)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(snap.catalog.models.get('f-chat-1')).toMatchObject({ vendor: 'f', kind: 'text', doors: ['chat'] });
  });

  it('reads GATEWAY_VENDOR_F_URLS and _KEY for it', () => {
    expect(t.gw.env.vendors.urls.f).toEqual([t.sim.routeUrl('f0'), t.sim.routeUrl('f1')]);
    expect(t.gw.routes.f?.map((r) => r.baseUrl)).toEqual([t.sim.routeUrl('f0'), t.sim.routeUrl('f1')]);
    expect(t.gw.warnings).toEqual([]);
  });

  it('is listed by GET /v1/models', async () => {
    const res = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(res.status).toBe(200);
    const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(ids).toContain('f-chat-1');
  });

  it("sends its calls to f's primary route with f's credential, and charges them", async () => {
    const before = await t.balance();
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'f-chat-1', messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { model: string }).model).toBe('f-chat-1');
    const got = t.sim.receivedOn('f0');
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ path: '/v1/chat/completions', headers: { authorization: 'Bearer vendor-f-secret' } });
    expect((got[0]!.body as { model: string }).model).toBe('f-chat-1');
    expect(await t.balance()).toBeLessThan(before);
  });

  it('a top-up may be restricted to it', async () => {
    const lot = await t.gw.ledger.topUp(t.walletId, { credits: 5, vendors: ['f'] });
    expect(lot.vendors).toEqual(['f']);
    await expect(t.gw.ledger.topUp(t.walletId, { credits: 5, vendors: ['g'] })).rejects.toMatchObject({
      status: 400,
      message: "vendors: 'g' is not a vendor; use a, b, c, d, e, f.",
    });
  });
});
