// What a new wallet's owner sees before anything happened: each empty page says what to do next (no credits:
// how to get some; no keys: create one; no calls or videos yet), and beside the Audience field what a student
// key may not do.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type OwnerClient, signIn } from './owner-client.ts';

let t: TestGateway;
let owner: OwnerClient;
let walletId: string;

beforeAll(async () => {
  t = await startTestGateway();
  ({ id: walletId } = await t.gw.ledger.createWallet({ credits: 0, splitsUsage: true, ownerId: 'new-school' }));
  owner = await signIn(t, walletId);
});
afterAll(async () => {
  await t?.close();
});

const text = async (path: string) => {
  const res = await owner.get(path);
  expect(res.status, path).toBe(200);
  return res.text();
};

describe('a new wallet’s empty pages say what to do', () => {
  it('no credits: how to get some, in dollars too', async () => {
    const page = await text('/dashboard/wallet');
    // The shipped billing.yaml shows won first (display_currency KRW at 1,400 a dollar).
    expect(page).toContain('<strong data-testid="money">₩0 · $0.00</strong> <small>(<span data-testid="credits">0</span> credits)</small>');
    expect(page).toContain('no credits to spend');
    for (const path of ['/dashboard/wallet', '/dashboard/keys', '/dashboard/usage', '/dashboard/videos', '/dashboard/audit']) {
      expect(await text(path), path).toContain('Balance <strong data-testid="summary-usd">₩0 · $0.00</strong>');
    }
    expect(page).toContain(`npx gateway wallet topup ${walletId} --credits 5000000</code> for $5`);
    expect(page).toContain('ask them for a top-up');
  });

  it('no keys: create one with the form on the page; the audience field says what a student key may not do', async () => {
    const page = await text('/dashboard/keys');
    expect(page).toContain('No API keys yet. Create one with the form above');
    expect(page).not.toContain('<table');
    expect(page).toMatch(/<select id="new-audience" name="audience" aria-describedby="audience-hint">/);
    expect(page).toContain('key cannot search the web, read web pages, reach remote MCP servers or\nmake videos');
  });

  it('no calls yet: where they will appear and how to make one', async () => {
    const page = await text('/dashboard/usage');
    expect(page).toContain("No calls yet. Calls made with this wallet's API keys appear here");
    expect(page).toContain('<a href="/dashboard/keys">Create a key</a>');
    expect(page).not.toContain('data-testid="usage-chart"');
  });

  it('no videos yet: how they are made', async () => {
    expect(await text('/dashboard/videos')).toContain('No video jobs yet. Videos are made through the API');
  });
});
