// billing.yaml's display_currency on the owner's pages: won first with the dollars and credits beside, won
// typed in a form, and a reload that changes or removes it taking effect on the next page. The ledger is
// untouched: the rate is a display and input conversion.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';
import { ADMIN, type OwnerClient, signIn } from './owner-client.ts';

let tree: TempTree;
let t: TestGateway;
let owner: OwnerClient;
let walletId: string;

const reload = () => fetch(`${t.url}/admin/v1/reload`, { method: 'POST', headers: ADMIN });
const walletPage = async () => (await owner.get('/dashboard/wallet')).text();

beforeAll(async () => {
  tree = tempCatalogTree();
  t = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog } });
  ({ id: walletId } = await t.gw.ledger.createWallet({ credits: 50_000_000, ownerId: 'school', name: '서울한빛중학교' }));
  owner = await signIn(t, walletId);
});
afterAll(async () => {
  await t?.close();
  tree?.remove();
});

describe('display_currency KRW at 1,400 a dollar', () => {
  it('a wallet of 50,000,000 credits shows ₩70,000 first, its dollars and credits beside', async () => {
    const page = await walletPage();
    expect(page).toContain('<strong data-testid="money">₩70,000 · $50.00</strong>');
    expect(page).toContain('(<span data-testid="credits">50,000,000</span> credits)');
    expect(page).toContain('Balance <strong data-testid="summary-usd">₩70,000 · $50.00</strong>');
    expect(page).toContain('Won are shown at the operator’s rate of ₩1,400 to the dollar');
    const keys = await (await owner.get('/dashboard/keys')).text();
    expect(keys).toContain('won such as ₩50,000, credits such as 500,000, or dollars such as $5');
  });

  it("every page's header names the wallet as the operator named it, its id beside", async () => {
    for (const path of ['/dashboard/wallet', '/dashboard/keys', '/dashboard/audit']) {
      expect(await (await owner.get(path)).text(), path).toContain(
        `<p data-testid="wallet-header">Wallet <strong data-testid="wallet-name">서울한빛중학교</strong> <code>${walletId}</code></p>`,
      );
    }
  });

  it('a key limit typed in won is kept in credits, and refused in words when it is not whole won', async () => {
    const made = await owner.post('/dashboard/keys', { count: '1', name: 'won', monthly_limit_credits: '₩7,000' });
    expect(made.status).toBe(303);
    const row = await t.gw.db.query<{ monthly_limit_credits: string }>(
      `SELECT monthly_limit_credits::text FROM api_keys WHERE wallet_id = $1 AND name = 'won'`,
      [walletId],
    );
    expect(row.rows[0]!.monthly_limit_credits).toBe('5000000');
    const bad = await owner.post('/dashboard/keys', { count: '1', name: 'bad', monthly_limit_credits: '₩7.5' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('Monthly limit: &quot;₩7.5&quot; is not a whole amount of KRW');
    const lots = await owner.post('/dashboard/keys', { count: '1', name: 'bad', monthly_limit_credits: 'lots' });
    expect(await lots.text()).toContain('Write won (such as ₩50,000), credits (such as 500,000) or dollars');
  });

  it('follows a reload: another rate on the next page, dollars alone once removed, a bad code refused', async () => {
    tree.edit('config/billing.yaml', (y) => y.replace('per_usd: 1400', 'per_usd: 1300'));
    expect((await reload()).status).toBe(200);
    expect(await walletPage()).toContain('<strong data-testid="money">₩65,000 · $50.00</strong>');
    tree.edit('config/billing.yaml', (y) =>
      y.replace('display_currency: { code: KRW, per_usd: 1300 }', 'display_currency: { code: EUR, per_usd: 1 }'),
    );
    const refused = await reload();
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('billing.yaml');
    expect(await walletPage()).toContain('₩65,000');
    tree.edit('config/billing.yaml', (y) => y.replace('display_currency: { code: EUR, per_usd: 1 }\n', ''));
    expect((await reload()).status).toBe(200);
    const dollars = await walletPage();
    expect(dollars).toContain('<strong data-testid="money">$50.00</strong>');
    expect(dollars).not.toContain('₩');
    expect((await t.gw.ledger.balance(walletId)).availableNano).toBe(50_000_000_000n);
  });
});
