// Sign-in with the school's identity provider, in a real browser (playwright-core driving Debian's chromium,
// headless) against a real OpenID provider (oidc-provider, test/dashboard/oidc-provider.ts) on another site:
// the owner signs in and out; the owner adds and removes managers and the audit trail names the owner; a
// viewer and a manager are held to their roles on the server (forged POSTs refused 403); an identity with
// several wallets chooses one, one with none is refused; and a wrong state, a wrong nonce, an ID token from
// another issuer and a provider that does not describe itself as the configured issuer open no session.

import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFlow, sealFlow } from '../../engine/dashboard/oidc-flow-cookie.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { startImpostor, startTestProvider, type TestProvider } from './oidc-provider.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let idp: TestProvider;
let impostor: { url: string; close(): Promise<void> }; // says it is itself; its tokens come from idp
let liar: { url: string; close(): Promise<void> }; // says it is idp
let t: TestGateway; // the school's gateway
let t2: TestGateway; // configured with an issuer whose ID tokens come from another one
let t3: TestGateway; // configured with an issuer whose discovery names another one
let t4: TestGateway; // matches people by verified e-mail; signing out also signs out of the provider
let browser: Browser;
let walletId: string; // alice's
let keyId: string;

const oidcEnv = (issuer: string) => ({
  GATEWAY_OIDC_ISSUER: issuer,
  GATEWAY_OIDC_CLIENT_ID: idp.clientId,
  GATEWAY_OIDC_CLIENT_SECRET: idp.clientSecret,
  GATEWAY_OIDC_NAME: 'Test School',
});

beforeAll(async () => {
  idp = await startTestProvider({
    alice: {},
    bob: {},
    carol: {},
    dave: {},
    erin: {},
    frank: { email: 'Frank@School.example', email_verified: true },
    gina: { email: 'gina@school.example', email_verified: false },
  });
  impostor = await startImpostor(idp.issuer, (port) => `http://localhost:${port}`);
  t = await startTestGateway({ env: oidcEnv(idp.issuer) });
  t2 = await startTestGateway({ env: oidcEnv(impostor.url) });
  liar = await startImpostor(idp.issuer, () => idp.issuer);
  t3 = await startTestGateway({ env: oidcEnv(liar.url) });
  t4 = await startTestGateway({ env: { ...oidcEnv(idp.issuer), GATEWAY_OIDC_MATCH: 'email', GATEWAY_OIDC_SIGN_OUT: 'provider' } });
  idp.configure(
    [t, t2, t3, t4].map((g) => `${g.url}/dashboard/oidc/callback`),
    [`${t4.url}/dashboard/signed-out`],
  );
  const w = await t.gw.ledger.createWallet({ credits: 1_000_000, ownerId: 'alice' });
  walletId = w.id;
  keyId = (await t.gw.keys.createApiKey(walletId, { name: 'lab' })).id;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const g of [t, t2, t3, t4]) await g?.close();
  await impostor?.close();
  await liar?.close();
  await idp?.close();
});

/** Clicks "Sign in with Test School" on the gateway `g` and goes through the provider's login and consent as `login`. */
async function signInThroughProvider(page: Page, g: TestGateway, loginName: string): Promise<void> {
  await page.goto(`${g.url}/dashboard/sign-in`);
  await page.getByRole('link', { name: 'Sign in with Test School' }).click();
  await page.waitForURL((u) => !u.href.startsWith(`${g.url}/dashboard/sign-in`));
  // The provider asks for a login, then for consent (remembered after the first time), then sends the browser back.
  for (let i = 0; i < 6 && !page.url().startsWith(g.url); i++) {
    const before = page.url();
    const login = page.locator('input[name="login"]');
    if (await login.count()) {
      await login.fill(loginName);
      await page.locator('input[name="password"]').fill('any');
      await page.locator('button[type="submit"]').click();
    } else {
      await page.getByRole('button', { name: 'Continue' }).click();
    }
    await page.waitForURL((u) => u.href !== before);
  }
  await page.waitForLoadState();
}

/** Whether `context` holds a dashboard session on gateway `g` (a page that needs one opens). */
async function hasSession(context: BrowserContext, g: TestGateway): Promise<boolean> {
  const page = await context.newPage();
  const res = await page.goto(`${g.url}/dashboard/wallet`);
  await page.close();
  return res!.status() === 200;
}

const csrfOf = (page: Page) => page.locator('input[name="csrf"]').first().inputValue();

async function newUser(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  return { context, page: await context.newPage() };
}

describe('sign-in with the identity provider', { timeout: 60_000 }, () => {
  it('the owner signs in through the provider and lands on the wallet; sign-out ends the session', async () => {
    const { context, page } = await newUser();
    await signInThroughProvider(page, t, 'alice');
    await page.waitForURL(`${t.url}/dashboard/wallet`);
    expect(await page.locator('main').textContent()).toContain(walletId);
    const cookie = (await context.cookies(t.url)).find((c) => c.name === 'gateway_dashboard');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect((await context.cookies(t.url)).some((c) => c.name === 'gateway_oidc')).toBe(false); // the flow is forgotten
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.url}/dashboard/signed-out`);
    const again = await page.goto(`${t.url}/dashboard/wallet`);
    expect(again!.status()).toBe(401);
    expect(await page.getByRole('link', { name: 'Sign in with Test School' }).count()).toBe(1);
    await context.close();
  });

  it('the owner adds and removes managers; the audit trail shows each with the owner as actor', async () => {
    const { context, page } = await newUser();
    await signInThroughProvider(page, t, 'alice');
    await page.waitForURL(`${t.url}/dashboard/wallet`);
    await page.getByRole('link', { name: 'Managers' }).click();
    for (const [who, role] of [
      ['bob', 'manager'],
      ['carol', 'viewer'],
      ['erin', 'viewer'],
    ]) {
      await page.getByLabel(/^Their subject/).fill(who!);
      await page.getByLabel('Role').selectOption(role!);
      await page.getByRole('button', { name: 'Save manager' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('The manager was added');
    }
    await page.getByRole('button', { name: 'Remove erin' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('The manager was removed');
    expect(await page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-manager')))).toEqual(['bob', 'carol']);

    await page.goto(`${t.url}/dashboard/audit?action=manager.added`);
    const added = page.locator('tbody tr');
    expect(await added.count()).toBe(3);
    // Who: the actor's kind in words over its id; the change: a line per field, not the stored JSON.
    for (const row of await added.all()) {
      expect(await row.locator('td').nth(3).textContent()).toMatch(/^Owner/);
      expect(await row.locator('td').nth(3).locator('code').textContent()).toBe('alice');
    }
    await page.goto(`${t.url}/dashboard/audit?action=manager.removed`);
    expect(await page.locator('tbody tr').count()).toBe(1);
    const removed = page.locator('tbody tr td');
    expect(await removed.nth(3).locator('code').textContent()).toBe('alice');
    expect(
      await removed
        .nth(2)
        .locator('.wrap')
        .evaluate((el) => el.innerHTML),
    ).toMatch(/^Account erin<br>Role (manager|viewer)$/);
    const rows = await t.gw.db.query<{ action: string; actor_kind: string; actor_id: string; before: unknown; after: unknown }>(
      `SELECT action, actor_kind, actor_id, before, after FROM wallet_audit WHERE wallet_id = $1 AND action LIKE 'manager.%' ORDER BY seq`,
      [walletId],
    );
    expect(rows.rows.map((r) => [r.action, r.actor_kind, r.actor_id, r.before, r.after])).toEqual([
      ['manager.added', 'owner', 'alice', null, { identity: 'bob', role: 'manager' }],
      ['manager.added', 'owner', 'alice', null, { identity: 'carol', role: 'viewer' }],
      ['manager.added', 'owner', 'alice', null, { identity: 'erin', role: 'viewer' }],
      ['manager.removed', 'owner', 'alice', { identity: 'erin', role: 'viewer' }, null],
    ]);
    await context.close();
  });

  it('a viewer reads but cannot close a key: no button, and a forged close is refused 403', async () => {
    const { context, page } = await newUser();
    await signInThroughProvider(page, t, 'carol');
    await page.waitForURL(`${t.url}/dashboard/wallet`);
    await page.getByRole('link', { name: 'API keys' }).click();
    expect(await page.locator(`tr[data-key-id="${keyId}"]`).count()).toBe(1);
    expect(await page.getByRole('button', { name: /^Close/ }).count()).toBe(0);
    expect(await page.getByRole('group', { name: 'Create API keys' }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Managers' }).count()).toBe(0);
    const csrf = await csrfOf(page);
    const forged = await page.request.post(`${t.url}/dashboard/keys/${keyId}/close`, {
      form: { csrf, confirm: 'yes' },
      headers: { origin: t.url },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    expect(await forged.text()).toContain('<title>Refused');
    const create = await page.request.post(`${t.url}/dashboard/keys`, {
      form: { csrf, name: 'sneaky' },
      headers: { origin: t.url },
      maxRedirects: 0,
    });
    expect(create.status()).toBe(403);
    const closed = await t.gw.db.query<{ closed_at: unknown }>(`SELECT closed_at FROM api_keys WHERE id = $1`, [keyId]);
    expect(closed.rows[0]!.closed_at).toBeNull();
    expect((await t.gw.db.query(`SELECT 1 FROM api_keys WHERE name = 'sneaky'`)).rows).toHaveLength(0);
    await context.close();
  });

  it('a manager creates a key (audited as the manager) but cannot add managers: a forged add is refused 403', async () => {
    const { context, page } = await newUser();
    await signInThroughProvider(page, t, 'bob');
    await page.waitForURL(`${t.url}/dashboard/wallet`);
    expect(await page.getByRole('link', { name: 'Managers' }).count()).toBe(0);
    await page.getByRole('link', { name: 'API keys' }).click();
    const create = page.getByRole('group', { name: 'Create API keys' });
    await create.getByLabel(/^Name/).fill('bob key');
    await create.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Key created');
    const made = await t.gw.db.query<{ actor_kind: string; actor_id: string }>(
      `SELECT a.actor_kind, a.actor_id FROM wallet_audit a JOIN api_keys k ON k.id = a.target_id WHERE a.action = 'key.created' AND k.name = 'bob key'`,
    );
    expect(made.rows).toEqual([{ actor_kind: 'manager', actor_id: 'bob' }]);

    const csrf = await csrfOf(page);
    const forged = await page.request.post(`${t.url}/dashboard/managers`, {
      form: { csrf, identity: 'mallory', role: 'owner' },
      headers: { origin: t.url },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    expect(await forged.text()).toContain('Only the wallet&#39;s owner can do this.');
    expect((await page.request.get(`${t.url}/dashboard/managers`, { maxRedirects: 0 })).status()).toBe(403);
    expect((await t.gw.db.query(`SELECT 1 FROM wallet_managers WHERE identity = 'mallory'`)).rows).toHaveLength(0);

    // Removed by the owner: the manager's session ends at its next page.
    await t.gw.db.query(`DELETE FROM wallet_managers WHERE wallet_id = $1 AND identity = 'bob'`, [walletId]);
    expect(await hasSession(context, t)).toBe(false);
    await t.gw.db.query(
      `INSERT INTO wallet_managers (wallet_id, identity, role, added_by, added_at) VALUES ($1, 'bob', 'manager', 'alice', now())`,
      [walletId],
    );
    await context.close();
  });

  it('an identity with several wallets chooses one; one with none is refused and gets no session', async () => {
    const second = await t.gw.ledger.createWallet({ credits: 1_000_000, ownerId: 'alice' });
    const { context, page } = await newUser();
    await signInThroughProvider(page, t, 'alice');
    expect(await page.locator('h1').textContent()).toBe('Choose a wallet');
    await page.getByRole('button', { name: new RegExp(second.id) }).click();
    await page.waitForURL(`${t.url}/dashboard/wallet`);
    expect(await page.locator('main').textContent()).toContain(second.id);
    await t.gw.db.query(`UPDATE wallets SET owner_id = 'someone-else' WHERE id = $1`, [second.id]);
    await context.close();

    const nobody = await newUser();
    await signInThroughProvider(nobody.page, t, 'dave');
    expect(await nobody.page.getByTestId('refusal').textContent()).toContain('no wallet here is owned or managed by that identity');
    expect(await hasSession(nobody.context, t)).toBe(false);
    await nobody.context.close();
  });
});

describe('matching by e-mail (GATEWAY_OIDC_MATCH=email), signing out at the provider too', { timeout: 60_000 }, () => {
  it('a verified address signs its owner in, whatever its case; an unverified one is refused', async () => {
    const frankWallet = (await t4.gw.ledger.createWallet({ credits: 1_000, ownerId: 'frank@school.example' })).id;
    await t4.gw.ledger.createWallet({ credits: 1_000, ownerId: 'gina@school.example' });
    const frank = await newUser();
    await signInThroughProvider(frank.page, t4, 'frank');
    await frank.page.waitForURL(`${t4.url}/dashboard/wallet`);
    expect(await frank.page.locator('main').textContent()).toContain(frankWallet);

    // GATEWAY_OIDC_SIGN_OUT=provider: the dashboard's sign-out leads on to the provider's, and back.
    await frank.page.getByRole('button', { name: 'Sign out' }).click();
    await frank.page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await frank.page.waitForURL(`${t4.url}/dashboard/signed-out`);
    expect(await hasSession(frank.context, t4)).toBe(false);
    await frank.page.getByRole('link', { name: 'Sign in with Test School' }).click();
    await frank.page.waitForURL((u) => u.href.startsWith(idp.issuer));
    await frank.page.locator('input[name="login"]').waitFor(); // the provider asks again: its session ended too
    await frank.context.close();

    const gina = await newUser();
    await signInThroughProvider(gina.page, t4, 'gina');
    expect(await gina.page.getByTestId('refusal').textContent()).toContain('has not verified the e-mail address gina@school.example');
    expect(await hasSession(gina.context, t4)).toBe(false);
    await gina.context.close();
  });
});

describe('answers that do not check out open no session', { timeout: 60_000 }, () => {
  /**
   * The provider's redirect back to gateway `g` for alice, held (not delivered): its URL. A browser cannot hold
   * the last hop of a redirect chain (request routing sees only a chain's first request), so alice first signs
   * in on the school's gateway in the browser and out again (the provider keeps her session and consent), and
   * the flow is then started and followed one hop at a time with the browser context's own cookies.
   */
  async function heldCallback(page: Page, g: TestGateway): Promise<string> {
    await signInThroughProvider(page, t, 'alice');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.url}/dashboard/signed-out`);
    const start = await page.request.get(`${g.url}/dashboard/oidc/start`, { maxRedirects: 0 });
    expect(start.status()).toBe(303);
    const auth = await page.request.get(start.headers().location!, { maxRedirects: 0 });
    const back = auth.headers().location ?? '';
    expect(back.startsWith(`${g.url}/dashboard/oidc/callback?`), back).toBe(true);
    expect(back).toContain('code=');
    return back;
  }

  it('a tampered state is refused', async () => {
    const { context, page } = await newUser();
    const url = new URL(await heldCallback(page, t));
    url.searchParams.set('state', 'not-the-state-we-sent');
    const res = await page.goto(url.href);
    expect(res!.status()).toBe(401);
    expect(await page.getByTestId('refusal').textContent()).toContain('unexpected "state" response parameter value');
    expect(await hasSession(context, t)).toBe(false);
    await context.close();
  });

  it('a code issued for another nonce is refused (the flow cookie resealed with another nonce, PKCE and state intact)', async () => {
    const { context, page } = await newUser();
    const url = await heldCallback(page, t);
    const cookie = (await context.cookies(t.url)).find((c) => c.name === 'gateway_oidc')!;
    const now = Date.parse(TEST_NOW); // the test gateway's fixed clock
    const flow = openFlow(idp.clientSecret, cookie.value, now);
    expect(flow?.step).toBe('provider');
    if (flow?.step !== 'provider') return;
    const other = sealFlow(
      idp.clientSecret,
      { ...flow, secrets: { ...flow.secrets, nonce: 'a-nonce-this-code-was-not-issued-for' } },
      now + 60_000,
    );
    await context.addCookies([{ ...cookie, value: other }]);
    const res = await page.goto(url);
    expect(res!.status()).toBe(401);
    expect(await page.getByTestId('refusal').textContent()).toContain('unexpected ID Token "nonce" claim value');
    expect(await hasSession(context, t)).toBe(false);
    await context.close();
  });

  it('an ID token from another issuer than the configured one is refused', async () => {
    const { context, page } = await newUser();
    // t2's issuer (the impostor) advertises no iss response parameter; without the real provider's the
    // client goes on to the token exchange, and the ID token's own issuer is what is checked and refused.
    const url = new URL(await heldCallback(page, t2));
    url.searchParams.delete('iss');
    const res = await page.goto(url.href);
    expect(res!.status()).toBe(401);
    expect(await page.getByTestId('refusal').textContent()).toContain('unexpected JWT "iss" (issuer) claim value');
    expect(await hasSession(context, t2)).toBe(false);
    await context.close();
  });

  it('an answer naming another issuer (the iss response parameter) is refused', async () => {
    const { context, page } = await newUser();
    const res = await page.goto(await heldCallback(page, t2));
    expect(res!.status()).toBe(401);
    expect(await page.getByTestId('refusal').textContent()).toContain('unexpected "iss" (issuer) response parameter value');
    expect(await hasSession(context, t2)).toBe(false);
    await context.close();
  });

  it('a provider whose discovery names another issuer is refused before the browser leaves', async () => {
    const { context, page } = await newUser();
    await page.goto(`${t3.url}/dashboard/sign-in`);
    const res = await Promise.all([
      page.waitForResponse(`${t3.url}/dashboard/oidc/start`),
      page.getByRole('link', { name: 'Sign in with Test School' }).click(),
    ]);
    expect(res[0].status()).toBe(502);
    expect(await page.getByTestId('refusal').textContent()).toContain('did not describe itself as');
    expect(await hasSession(context, t3)).toBe(false);
    await context.close();
  });
});
