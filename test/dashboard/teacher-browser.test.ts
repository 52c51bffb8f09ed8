// Teachers, in a real browser (playwright-core driving Debian's chromium, headless) against a real OpenID
// provider (oidc-provider, test/dashboard/oidc-provider.ts): the owner makes two classes with their limits and
// keys on the classes page and gives one class to a manager; that teacher, signed in through the provider,
// sees and manages that class's keys and its month's CSV, and is refused (403) another class's page, CSV and
// keys (read, change, close) and the wallet's other pages. The teacher's changes name the teacher in the
// audit trail. Once the owner takes the class away, the teacher sees no class, never the whole wallet.

import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startTestProvider, type TestProvider } from './oidc-provider.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let idp: TestProvider;
let t: TestGateway;
let browser: Browser;
let walletId: string;

beforeAll(async () => {
  idp = await startTestProvider({ alice: {}, tom: {} });
  t = await startTestGateway({
    env: {
      GATEWAY_OIDC_ISSUER: idp.issuer,
      GATEWAY_OIDC_CLIENT_ID: idp.clientId,
      GATEWAY_OIDC_CLIENT_SECRET: idp.clientSecret,
      GATEWAY_OIDC_NAME: 'Test School',
    },
  });
  idp.configure([`${t.url}/dashboard/oidc/callback`]);
  walletId = (await t.gw.ledger.createWallet({ credits: 1_000_000, ownerId: 'alice', name: '서울한빛중학교' })).id;
  await t.gw.db.query(
    `INSERT INTO wallet_managers (wallet_id, identity, role, added_by, added_at) VALUES ($1, 'tom', 'manager', 'alice', now())`,
    [walletId],
  );
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await idp?.close();
});

async function signIn(page: Page, login: string): Promise<void> {
  await page.goto(`${t.url}/dashboard/sign-in`);
  await page.getByRole('link', { name: 'Sign in with Test School' }).click();
  await page.waitForURL((u) => !u.href.startsWith(`${t.url}/dashboard/sign-in`));
  for (let i = 0; i < 6 && !page.url().startsWith(t.url); i++) {
    const before = page.url();
    const field = page.locator('input[name="login"]');
    if (await field.count()) {
      await field.fill(login);
      await page.locator('input[name="password"]').fill('any');
      await page.locator('button[type="submit"]').click();
    } else {
      await page.getByRole('button', { name: 'Continue' }).click();
    }
    await page.waitForURL((u) => u.href !== before);
  }
  // The callback's page sends the browser on to the dashboard's start (a refresh), which sends it to its first page.
  await page.waitForURL((u) => u.pathname === '/dashboard/wallet' || u.pathname === '/dashboard/groups');
  await page.waitForLoadState();
}

/** The owner makes a class with a monthly limit and one key in it, on the classes page; returns its id. */
async function makeClass(page: Page, name: string, monthly: string, keyName: string): Promise<string> {
  await page.goto(`${t.url}/dashboard/groups`);
  const form = page.getByRole('group', { name: 'New class' });
  await form.getByLabel('Class name').fill(name);
  await form.getByLabel(/^Monthly limit/).fill(monthly);
  await form.getByRole('button', { name: 'Create class' }).click();
  await page.waitForURL(/\/dashboard\/groups\/grp_/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  const keys = page.getByRole('group', { name: 'New keys in this class' });
  await keys.getByLabel(/^Name/).fill(keyName);
  await keys.getByRole('button', { name: 'Create' }).click();
  await expect.poll(() => page.locator('h1').textContent()).toBe('Key created');
  return id;
}

const keyOf = async (name: string) =>
  (await t.gw.db.query<{ id: string }>(`SELECT id FROM api_keys WHERE wallet_id = $1 AND name = $2`, [walletId, name])).rows[0]!.id;

describe('a teacher limited to one class [browser, OpenID provider]', { timeout: 90_000 }, () => {
  let mine: string;
  let theirs: string;

  it('the owner makes two classes with their keys and gives one to the teacher', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, 'alice');
    mine = await makeClass(page, '3-1', '500,000', 'kim');
    theirs = await makeClass(page, '3-2', '600,000', 'lee');
    await page.goto(`${t.url}/dashboard/groups/${mine}`);
    await page.getByRole('button', { name: 'Give this class to tom' }).click();
    await page.waitForURL(`${t.url}/dashboard/groups/${mine}`);
    expect(await page.getByRole('button', { name: 'Take this class from tom' }).count()).toBe(1);
    await page.goto(`${t.url}/dashboard/groups`);
    expect(await page.locator('tr[data-group-id]').count()).toBe(2);
    // Money first, as the rest of the dashboard shows it (won with the shipped display currency), credits beside.
    const month = await page.locator(`tr[data-group-id="${mine}"] [data-testid="month"]`).textContent();
    expect(month).toMatch(/^\s*₩/);
    expect(month).toContain('500,000');
    await context.close();
  });

  it("the teacher sees and manages their class only: another class's keys and pages are 403", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, 'tom');
    expect(new URL(page.url()).pathname).toBe('/dashboard/groups');
    // The header names the wallet as the operator named it, its id beside; the balance strip is not theirs.
    expect(await page.getByTestId('wallet-header').textContent()).toBe(`Wallet 서울한빛중학교 ${walletId}`);
    expect(await page.getByTestId('wallet-name').textContent()).toBe('서울한빛중학교');
    expect(await page.getByTestId('summary').count()).toBe(0);
    // The nav offers only what opens: the keys and the classes, not the wallet, usage or audit pages.
    expect(await page.locator('header nav a').allTextContents()).toEqual(['API keys', 'Classes']);
    expect(await page.locator('tr[data-group-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-group-id')))).toEqual([mine]);
    await page.goto(`${t.url}/dashboard/groups/${mine}`);
    expect(await page.locator(`tr[data-key-id="${await keyOf('kim')}"]`).count()).toBe(1);
    await page.goto(`${t.url}/dashboard/keys`);
    expect(await page.locator('tr[data-key-id]').count()).toBe(1);
    // Their classes' keys are counted, not the wallet's key slots, which are the owner's concern.
    const intro = await page.getByTestId('keys-intro').textContent();
    expect(intro).toMatch(/^Keys of your classes: 1 active\./);
    expect(intro).not.toMatch(/slot/);
    const csv = await page.request.get(`${t.url}/dashboard/groups/${mine}/usage.csv?month=2026-11`);
    expect(csv.status()).toBe(200);
    // A byte-order mark first, so Excel on a Korean Windows reads the class's Hangul names as UTF-8.
    expect((await csv.text()).split('\r\n')[0]).toMatch(/^\uFEFFday,key_id,key_name/);

    const csrf = await page.locator('input[name="csrf"]').first().inputValue();
    const post = (path: string, form: Record<string, string>) =>
      page.request.post(`${t.url}${path}`, { form: { csrf, ...form }, headers: { origin: t.url }, maxRedirects: 0 });
    const lee = await keyOf('lee');
    for (const path of [
      `/dashboard/groups/${theirs}`,
      `/dashboard/groups/${theirs}/usage.csv`,
      `/dashboard/keys/${lee}/close`,
      '/dashboard/wallet',
      '/dashboard/usage',
      '/dashboard/audit',
    ]) {
      expect((await page.request.get(`${t.url}${path}`, { maxRedirects: 0 })).status(), path).toBe(403);
    }
    expect((await post(`/dashboard/keys/${lee}`, { monthly_limit_credits: '1' })).status()).toBe(403);
    expect((await post(`/dashboard/keys/${lee}/close`, { confirm: 'yes' })).status()).toBe(403);
    expect((await post(`/dashboard/groups/${theirs}/keys`, { name: 'sneaky' })).status()).toBe(403);
    // Their own class's limits are the owner's to change, and the refusal says so rather than "not your class".
    const ownLimit = await post(`/dashboard/groups/${mine}`, { monthly_limit_credits: '9,000,000' });
    expect(ownLimit.status()).toBe(403);
    expect(await ownLimit.text()).toContain('or a manager of the whole wallet, can do this.');
    const leeRow = await t.gw.db.query(`SELECT monthly_limit_credits, closed_at FROM api_keys WHERE id = $1`, [lee]);
    expect(leeRow.rows[0]).toMatchObject({ monthly_limit_credits: null, closed_at: null });

    // Their own class's keys they manage, and the trail names them.
    const kim = await keyOf('kim');
    expect((await post(`/dashboard/keys/${kim}`, { monthly_limit_credits: '1,000' })).status()).toBe(303);
    // The class page's form has the keys page's fields: a key made there can end with the term.
    await page.goto(`${t.url}/dashboard/groups/${mine}`);
    expect(await page.locator('#ck-expires').getAttribute('type')).toBe('date');
    expect(await page.locator('#ck-models').count()).toBe(1);
    expect((await post(`/dashboard/groups/${mine}/keys`, { name: 'park', expires_on: '2027-02-28' })).status()).toBe(303);
    const trail = await t.gw.db.query<{ action: string; actor_kind: string; actor_id: string }>(
      `SELECT action, actor_kind, actor_id FROM wallet_audit WHERE wallet_id = $1 AND actor_kind = 'manager' ORDER BY seq`,
      [walletId],
    );
    expect(trail.rows).toEqual([
      { action: 'key.changed', actor_kind: 'manager', actor_id: 'tom' },
      { action: 'key.created', actor_kind: 'manager', actor_id: 'tom' },
    ]);
    expect((await t.gw.db.query(`SELECT group_id, expires_on::text AS until FROM api_keys WHERE name = 'park'`)).rows[0]).toEqual({
      group_id: mine,
      until: '2027-02-28',
    });

    // A class whose day is used up says so, and that only the owner can raise it (a teacher cannot).
    await page.goto(`${t.url}/dashboard/groups/${mine}`);
    expect(await page.getByTestId('limit-reached').count()).toBe(0);
    await t.gw.db.query(`UPDATE key_groups SET daily_limit_credits = 0 WHERE id = $1`, [mine]);
    await page.goto(`${t.url}/dashboard/groups/${mine}`);
    expect(await page.getByTestId('limit-reached').textContent()).toBe(
      "This class has used today's limit: its keys' calls are refused until midnight, Korean time. Only the wallet's owner can raise a class's limit: ask them to lift it.",
    );
    await t.gw.db.query(`UPDATE key_groups SET daily_limit_credits = NULL WHERE id = $1`, [mine]);
    await context.close();
  });

  it('the class taken from the teacher: they see no class, and the rest of the wallet stays 403', async () => {
    const owner = await browser.newContext();
    const ownerPage = await owner.newPage();
    await signIn(ownerPage, 'alice');
    await ownerPage.goto(`${t.url}/dashboard/groups/${mine}`);
    await ownerPage.getByRole('button', { name: 'Take this class from tom' }).click();
    await ownerPage.waitForURL(`${t.url}/dashboard/groups/${mine}`);
    expect(await ownerPage.getByRole('button', { name: 'Give this class to tom' }).count()).toBe(1);
    await owner.close();

    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, 'tom');
    expect(await page.locator('tr[data-group-id]').count()).toBe(0);
    const csrf = await page.locator('input[name="csrf"]').first().inputValue();
    for (const path of [
      `/dashboard/groups/${mine}`,
      `/dashboard/groups/${theirs}`,
      '/dashboard/wallet',
      '/dashboard/usage',
      '/dashboard/audit',
    ]) {
      expect((await page.request.get(`${t.url}${path}`, { maxRedirects: 0 })).status(), path).toBe(403);
    }
    const lee = await keyOf('lee');
    const changed = await page.request.post(`${t.url}/dashboard/keys/${lee}`, {
      form: { csrf, monthly_limit_credits: '1' },
      headers: { origin: t.url },
      maxRedirects: 0,
    });
    expect(changed.status()).toBe(403);
    await page.goto(`${t.url}/dashboard/keys`);
    expect(await page.locator('tr[data-key-id]').count()).toBe(0);
    await context.close();
  });
});
