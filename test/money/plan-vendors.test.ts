// plan_restricted_vendors is read at use: after a change (no restart) admission follows it, and agrees
// with what GET /v1/models lists.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

describeEachDatabase('ledger plan vendors', (getDb: () => Db) => {
  it('a changed list applies to the next reserve and planAllows of the same ledger', async () => {
    let plan: readonly string[] = ['c'];
    const l = createLedger(getDb(), { clock: fixedClock('2026-05-01T00:00:00Z'), planVendors: () => plan });
    const w = await l.createWallet();
    await l.topUp(w.id, { credits: 10, vendors: ['d'] });
    const reserveC = () => l.reserve({ walletId: w.id, vendor: 'c', amountNano: 1000n, callId: 'call-c' });

    expect(await reserveC()).toEqual({ ok: false, reason: 'not_in_plan', availableNano: 0n });
    expect(await l.planAllows(w.id, 'c')).toBe(false);

    plan = [];
    expect(await reserveC()).toEqual({ ok: false, reason: 'insufficient_credit', availableNano: 0n });
    expect(await l.planAllows(w.id, 'c')).toBe(true);

    plan = ['b'];
    const b = await l.reserve({ walletId: w.id, vendor: 'b', amountNano: 1000n, callId: 'call-b' });
    expect(b).toEqual({ ok: false, reason: 'not_in_plan', availableNano: 0n });
    expect(await l.planAllows(w.id, 'b')).toBe(false);
    // Refusals move nothing.
    expect(await l.balance(w.id)).toMatchObject({ availableNano: 10_000n, reservedNano: 0n });
  });
});

describe('plan_restricted_vendors on reload', () => {
  let tree: TempTree;
  let t: TestGateway;
  let key: string;
  let walletId: string;
  beforeAll(async () => {
    tree = tempCatalogTree();
    t = await startTestGateway({ dirs: tree });
    walletId = (await t.gw.ledger.createWallet()).id;
    await t.gw.ledger.topUp(walletId, { credits: 1_000_000, vendors: ['d'] });
    key = (await t.gw.keys.createApiKey(walletId)).key;
  });
  afterAll(async () => {
    await t?.close();
    tree?.remove();
  });

  const chat = async (model: string) => {
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return { status: res.status, type: ((await res.json()) as { error?: { type: string } }).error?.type };
  };
  const listedVendors = async () => {
    const res = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    return { b: ids.some((id) => id.startsWith('b-')), c: ids.some((id) => id.startsWith('c-')) };
  };
  const setPlan = async (list: string) => {
    tree.edit('config/billing.yaml', (text) => text.replace(/^plan_restricted_vendors: .*$/m, `plan_restricted_vendors: ${list}`));
    const res = await fetch(`${t.url}/admin/v1/reload`, { method: 'POST', headers: { authorization: 'Bearer test-admin-token' } });
    expect(res.status).toBe(200);
  };

  it('admission and GET /v1/models follow the reloaded list together', async () => {
    // At start ([c]): a D pack cannot call vendor C (403 not in plan) and C models are not listed.
    expect(await chat('c-flash-3')).toEqual({ status: 403, type: 'model_not_in_plan' });
    expect(await chat('b-6')).toEqual({ status: 402, type: 'insufficient_credit' });
    expect(await listedVendors()).toEqual({ b: true, c: false });

    await setPlan('[b]');
    expect(await chat('c-flash-3')).toEqual({ status: 402, type: 'insufficient_credit' });
    expect(await chat('b-6')).toEqual({ status: 403, type: 'model_not_in_plan' });
    expect(await listedVendors()).toEqual({ b: false, c: true });
    // Every refusal, before and after, charged and held nothing.
    expect(await t.gw.ledger.balance(walletId)).toMatchObject({ availableNano: 1_000_000_000n, reservedNano: 0n });
  });
});
