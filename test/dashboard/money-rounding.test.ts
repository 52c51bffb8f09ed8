// Money on the owner's pages rounds by what the amount is (core/money.ts Rounding): a balance ending in half a won
// (and half a cent) reads down, never more than the wallet has; a charge reads up, never less than the call cost.
// The shipped billing.yaml shows won at 1,400 a dollar. Won given to a wallet round up to the credit, so a top-up of
// ₩100,000 (71,428,571.4 credits) makes a balance that reads ₩100,000, not ₩99,999.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { ADMIN, type OwnerClient, signIn } from './owner-client.ts';

let t: TestGateway;
let owner: OwnerClient;

beforeAll(async () => {
  // 9,997,500 credits = $9.9975 = ₩13,996.5: half up would read ₩13,997 · $10.00.
  t = await startTestGateway({ credits: 9_997_500 });
  owner = await signIn(t, t.walletId);
});
afterAll(async () => {
  await t?.close();
});

describe('money on the dashboard rounds by what the amount is', () => {
  it('a balance of ₩13,996.5 reads ₩13,996 · $9.99 on the wallet page and in the strip', async () => {
    const page = await (await owner.get('/dashboard/wallet')).text();
    expect(page).toContain('<strong data-testid="money">₩13,996 · $9.99</strong>');
    expect(page).toContain('Balance <strong data-testid="summary-usd">₩13,996 · $9.99</strong>');
  });

  it('a charge of ₩14.175 ($0.010125) reads ₩15 · $0.02 in the calls list and on its page', async () => {
    // b-5: $1.25 and $10 per million tokens, so 100 in and 1,000 out cost 10,125,000 nano-USD.
    const res = await post(t, '/v1/chat/completions', {
      model: 'b-5',
      messages: [{ role: 'user', content: 'hi [[sim:usage input=100 output=1000]]' }],
      max_completion_tokens: 2000,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-service-charged-nano')).toBe('10125000');
    for (let i = 0; i < 100 && (await t.gw.ledger.balance(t.walletId)).reservedNano !== 0n; i++) await sleep(20);
    const id = res.headers.get('x-request-id')!;
    expect(await (await owner.get('/dashboard/usage')).text()).toContain('<small class="usd">(₩15 · $0.02)</small>');
    expect(await (await owner.get(`/dashboard/usage/${id}`)).text()).toContain('(₩15 · $0.02; 10,125,000 nano-USD)');
  });

  it('a named lot reads by its name on the wallet page and in GET /v1/credits, its id beside', async () => {
    const lot = await t.gw.ledger.topUp(t.walletId, { credits: 1000, label: '2026 2학기' });
    const page = await (await owner.get('/dashboard/wallet')).text();
    expect(page).toContain(`<td>2026 2학기<br><small><code>${lot.id}</code></small></td>`);
    const credits = (await (await fetch(`${t.url}/v1/credits`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json()) as {
      lots: { id: string; label: string | null }[];
    };
    expect(credits.lots.find((l) => l.id === lot.id)?.label).toBe('2026 2학기');
  });

  it('a top-up of ₩100,000 reads ₩100,000: in its answer, as the balance and as the lot given', async () => {
    const admin = (path: string, body: unknown) =>
      fetch(`${t.url}${path}`, { method: 'POST', headers: { ...ADMIN, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const made = await admin('/admin/v1/wallets', { name: '한빛초등학교', credits: 0 });
    expect(made.status, await made.clone().text()).toBe(201);
    const walletId = ((await made.json()) as { id: string }).id;
    const topUp = await admin(`/admin/v1/wallets/${walletId}/credits`, { credits: '₩100,000' });
    expect(topUp.status, await topUp.clone().text()).toBe(201);
    expect(await topUp.json()).toMatchObject({ credits: 71_428_572, money: '₩100,000 · $71.42' });
    const school = await signIn(t, walletId);
    const page = await (await school.get('/dashboard/wallet')).text();
    expect(page).toContain('<strong data-testid="money">₩100,000 · $71.42</strong>');
    expect(page).toContain('<span class="used">₩100,000 · $71.42</span> <small class="credits">71,428,572</small>');
    expect(page).not.toContain('₩99,999');
  });
});
