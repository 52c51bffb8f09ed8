// The owner's dashboard over real HTTP, on PGlite and PostgreSQL: sign-in links are one-time and expire,
// the cookie is HttpOnly + SameSite=Strict (+ Secure off loopback), every change needs the CSRF token and a
// same-origin request, sign-out and a change of owner end the session, one owner never reaches another
// wallet's keys or calls, and the dashboard's key changes act at once on the model doors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { post, sleep } from '../e2e/e2e.ts';
import { databaseKinds, openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { ADMIN, cookieParts, issueLink, type OwnerClient, redeem, signIn } from './owner-client.ts';

const chat = (t: TestGateway, key: string, maxTokens = 2000) =>
  post(
    t,
    '/v1/chat/completions',
    { model: 'b-5', messages: [{ role: 'user', content: 'hi [[sim:usage input=100 output=50]]' }], max_completion_tokens: maxTokens },
    { authorization: `Bearer ${key}` },
  );

async function settled(t: TestGateway, walletId: string) {
  for (let i = 0; i < 100 && (await t.gw.ledger.balance(walletId)).reservedNano !== 0n; i++) await sleep(20);
}

const keyRows = async (t: TestGateway, walletId: string) =>
  (
    await t.gw.db.query<{ id: string; name: string | null; monthly_limit_credits: string | null; closed_at: Date | null }>(
      `SELECT id, name, monthly_limit_credits::text, closed_at FROM api_keys WHERE wallet_id = $1 AND kind = 'api' ORDER BY seq`,
      [walletId],
    )
  ).rows;

for (const kind of databaseKinds) {
  const skip = kind === 'postgres' && !postgresAvailability.ok && !REQUIRE_POSTGRES;
  describe.skipIf(skip)(`dashboard sessions and changes [${kind}]`, () => {
    let t: TestGateway;
    let pg: TestPostgres | undefined;
    const clock = fixedClock(TEST_NOW);
    let owner: OwnerClient;

    beforeAll(async () => {
      if (kind === 'postgres') pg = await openTestPostgres();
      t = await startTestGateway({ clock, env: pg ? { DATABASE_URL: pg.url } : {} });
      owner = await signIn(t, t.walletId);
    });
    afterAll(async () => {
      await t?.close();
      await pg?.cleanup();
    });

    it('the admin API issues links only with the admin token and for a wallet that exists', async () => {
      const noToken = await fetch(`${t.url}/admin/v1/wallets/${t.walletId}/sign-in-link`, { method: 'POST' });
      expect(noToken.status).toBe(401);
      const missing = await fetch(`${t.url}/admin/v1/wallets/w_nope/sign-in-link`, { method: 'POST', headers: ADMIN });
      expect(missing.status).toBe(404);
      const link = await issueLink(t, t.walletId);
      expect(link.url).toMatch(new RegExp(`^${t.url}/dashboard/sign-in\\?token=[A-Za-z0-9_-]{40,}$`));
      expect(Date.parse(link.expires_at) - Date.parse(TEST_NOW)).toBe(15 * 60_000);
      // Only the hash is stored: the token in the link is nowhere in the table.
      const token = new URL(link.url).searchParams.get('token')!;
      const stored = await t.gw.db.query<{ token_hash: string }>(`SELECT token_hash FROM dashboard_sign_in_tokens`);
      expect(stored.rows.some((r) => r.token_hash === token)).toBe(false);
    });

    it('nothing works without a session; a link works once, gives an HttpOnly SameSite=Strict cookie, and its page alone spends nothing', async () => {
      for (const path of [
        '/dashboard',
        '/dashboard/wallet',
        '/dashboard/keys',
        '/dashboard/usage',
        '/dashboard/usage.csv',
        '/dashboard/videos',
        '/dashboard/management-keys',
      ]) {
        const res = await fetch(`${t.url}${path}`, { redirect: 'manual' });
        expect(res.status, path).toBe(401);
        expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      }
      const noSession = await fetch(`${t.url}/dashboard/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'count=1',
      });
      expect(noSession.status).toBe(401);

      const link = await issueLink(t, t.walletId);
      const pageRes = await fetch(link.url);
      expect(pageRes.status).toBe(200);
      expect(pageRes.headers.get('set-cookie')).toBeNull();
      expect(await pageRes.text()).toContain('<form method="post" action="/dashboard/sign-in">');

      const first = await redeem(t, link.url, { origin: t.url });
      expect(first.status).toBe(303);
      expect(first.headers.get('location')).toBe('/dashboard/wallet');
      expect(first.headers.getSetCookie().map(cookieParts)).toEqual([
        {
          name: 'gateway_dashboard',
          value: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
          attributes: { path: '/', 'max-age': '43200', httponly: true, samesite: 'Strict' },
        },
      ]);
      expect((await redeem(t, link.url)).status).toBe(401); // one time only
    });

    it('a link expires after 15 minutes, and a link from another origin is refused', async () => {
      const link = await issueLink(t, t.walletId);
      expect((await redeem(t, link.url, { origin: 'https://evil.example' })).status).toBe(403);
      clock.advance(15 * 60_000 + 1);
      try {
        expect((await redeem(t, link.url)).status).toBe(401);
      } finally {
        clock.set(TEST_NOW);
      }
    });

    it('off loopback the cookie is Secure with the __Host- prefix', async () => {
      const link = await issueLink(t, t.walletId);
      const token = new URL(link.url).searchParams.get('token')!;
      const res = await t.gw.app.inject({
        method: 'POST',
        url: '/dashboard/sign-in',
        headers: { host: 'gateway.example.com', 'content-type': 'application/x-www-form-urlencoded' },
        payload: `token=${token}`,
      });
      expect(res.statusCode).toBe(303);
      expect(cookieParts(String(res.headers['set-cookie']))).toEqual({
        name: '__Host-gateway_dashboard',
        value: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
        attributes: { path: '/', 'max-age': '43200', httponly: true, samesite: 'Strict', secure: true },
      });
    });

    it('a change without the CSRF token, with a stale one, or from another origin is refused and changes nothing', async () => {
      const before = (await keyRows(t, t.walletId)).length;
      const noToken = await owner.post('/dashboard/keys', { count: '1', name: 'x' }, { csrf: false });
      expect(noToken.status).toBe(403);
      expect(await noToken.text()).toContain('security token');
      expect((await owner.post('/dashboard/keys', { count: '1', name: 'x' }, { csrf: 'A'.repeat(43) })).status).toBe(403);
      expect((await owner.post('/dashboard/keys', { count: '1', name: 'x' }, { origin: 'https://evil.example' })).status).toBe(403);
      expect((await keyRows(t, t.walletId)).length).toBe(before);
      // The same form with its token and our own origin goes through.
      const ok = await owner.post('/dashboard/keys', { count: '1', name: 'csrf ok' }, { origin: t.url });
      expect(ok.status).toBe(303);
      expect((await keyRows(t, t.walletId)).length).toBe(before + 1);
    });

    it('the CSRF token is good only with its browser’s cookie and its own session', async () => {
      // The first signed-in page set the secret’s cookie: HttpOnly, SameSite=Strict, not Secure on loopback.
      const first = await fetch(`${t.url}/dashboard/wallet`, { headers: { cookie: owner.setCookie.split(';')[0]! } });
      const csrfCookie = first.headers
        .getSetCookie()
        .map(cookieParts)
        .find((c) => c.name === 'gateway_csrf');
      expect(csrfCookie?.attributes).toEqual({ path: '/', httponly: true, samesite: 'Strict' });
      const before = (await keyRows(t, t.walletId)).length;
      const send = (cookie: string, csrf: string) =>
        fetch(`${t.url}/dashboard/keys`, {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ csrf, count: '1', name: 'x' }).toString(),
        });
      const sessionOnly = owner.cookie.split('; ').filter((c) => c.startsWith('gateway_dashboard='))[0]!;
      // The page's token without the cookie it was made for (or with another browser’s) is refused.
      expect((await send(sessionOnly, owner.csrf)).status).toBe(403);
      expect((await send(`${sessionOnly}; gateway_csrf=${csrfCookie?.value}`, owner.csrf)).status).toBe(403);
      // A second session in the same browser (same CSRF cookie) cannot use the first one’s token.
      const again = await redeem(t, (await issueLink(t, t.walletId)).url);
      const otherSession = again.headers.getSetCookie()[0]!.split(';')[0];
      const browserCsrf = owner.cookie.split('; ').filter((c) => c.startsWith('gateway_csrf='))[0];
      expect((await send(`${otherSession}; ${browserCsrf}`, owner.csrf)).status).toBe(403);
      expect((await keyRows(t, t.walletId)).length).toBe(before);
      // The model doors parse and set no cookie.
      const models = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}`, cookie: owner.cookie } });
      expect(models.headers.getSetCookie()).toEqual([]);
    });

    it('keys: numbered names from a prefix, full keys shown once, names escaped, bad input a 400 page', async () => {
      const res = await owner.follow(await owner.post('/dashboard/keys', { count: '3', name: 'lab', monthly_limit_credits: '500' }));
      expect(res.status).toBe(200);
      const page = await res.text();
      const shown = [...page.matchAll(/<code class="secret" id="new-key-\d">(sk-svc-[A-Za-z0-9]+)<\/code>/g)].map((m) => m[1]);
      expect(shown).toHaveLength(3);
      for (const key of shown) expect((await t.gw.keys.authenticate(key, 'api')).walletId).toBe(t.walletId);
      const names = (await keyRows(t, t.walletId)).map((r) => r.name);
      expect(names.slice(-3)).toEqual(['lab 1', 'lab 2', 'lab 3']);
      const list = await (await owner.get('/dashboard/keys')).text();
      for (const key of shown) expect(list).not.toContain(key); // never again

      const evil = await owner.post('/dashboard/keys', { count: '1', name: '<img src=x onerror=alert(1)>' });
      expect(evil.status).toBe(303);
      const evilShown = await (await owner.follow(evil)).text();
      expect(evilShown).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(evilShown).not.toContain('<img src=x');
      const listed = await (await owner.get('/dashboard/keys')).text();
      expect(listed).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(listed).not.toContain('<img src=x');

      // A refused form comes back filled in as typed, the reason in words beside it, not API field names.
      const bad = await owner.post('/dashboard/keys', { count: '1', name: 'bad <b>', monthly_limit_credits: 'lots' });
      expect(bad.status).toBe(400);
      const badPage = await bad.text();
      expect(badPage).toContain(
        'Monthly limit: &quot;lots&quot; is not an amount. Write won (such as ₩50,000), credits (such as 500,000) or dollars (such as $5 or 5 USD).',
      );
      expect(badPage).toContain('id="new-name" name="name" maxlength="40" value="bad &lt;b&gt;"');
      expect(badPage).toContain('name="monthly_limit_credits" value="lots"');
      expect(badPage).not.toContain('monthly_limit_credits must');
      const over = await owner.post('/dashboard/keys', { count: '1', monthly_limit_credits: '$5', daily_limit_credits: '6 USD' });
      expect(over.status).toBe(400);
      // The limits read back as money, as typed (won first with the shipped display currency), not as raw credits.
      expect(await over.text()).toContain('The daily limit (₩8,400 · $6.00) must not exceed the monthly limit (₩7,000 · $5.00).');
      // Dollars and grouped credits are taken as typed; the list shows dollars beside the credits.
      const dollars = await owner.post('/dashboard/keys', {
        count: '1',
        name: 'dollars',
        monthly_limit_credits: '$5',
        daily_limit_credits: '1,000,000',
      });
      expect(dollars.status).toBe(303);
      const row = (await keyRows(t, t.walletId)).find((r) => r.name === 'dollars')!;
      expect(row.monthly_limit_credits).toBe('5000000');
      const withUsd = await (await owner.get('/dashboard/keys')).text();
      expect(withUsd).toMatch(
        /<td class="num"><span class="used">₩0 · \$0\.00 of ₩7,000 · \$5\.00<\/span> <small class="credits" data-testid="month">0 of 5,000,000<\/small><\/td>/,
      );
      // A refused change keeps the key's form open with what was typed.
      const refusedChange = await owner.post(`/dashboard/keys/${row.id}`, { name: 'dollars', monthly_limit_credits: '5 EUR' });
      expect(refusedChange.status).toBe(400);
      const changePage = await refusedChange.text();
      expect(changePage).toContain(`id="monthly-${row.id}" name="monthly_limit_credits" value="5 EUR"`);
      expect(changePage).toContain('<details open>');
      expect((await keyRows(t, t.walletId)).find((r) => r.id === row.id)!.monthly_limit_credits).toBe('5000000');
      const tooMany = await owner.post('/dashboard/keys', { count: '1000', name: 'many' });
      expect(tooMany.status).toBe(400);
    });

    it('post/redirect/get: the new keys are shown on the page the POST leads to, once; reloading it makes none', async () => {
      const before = (await keyRows(t, t.walletId)).length;
      const res = await owner.post('/dashboard/keys', { count: '2', name: 'prg' });
      expect(res.headers.get('location')).toBe('/dashboard/keys/created');
      const first = await (await owner.follow(res)).text();
      expect([...first.matchAll(/class="secret"/g)]).toHaveLength(2);
      const again = await owner.get('/dashboard/keys/created');
      expect(again.status).toBe(200);
      const againPage = await again.text();
      expect(againPage).not.toContain('class="secret"');
      expect(againPage).toContain('shown once');
      expect((await keyRows(t, t.walletId)).length).toBe(before + 2);
      // The flash is sealed with the session's cookie secret: the table holds no key.
      const stored = await t.gw.db.query<{ sealed: string }>(`SELECT sealed FROM dashboard_flash`);
      const mk = await owner.post('/dashboard/management-keys', { name: 'sealed' });
      const sealed = await t.gw.db.query<{ sealed: string }>(`SELECT sealed FROM dashboard_flash`);
      expect(stored.rows).toEqual([]);
      expect(sealed.rows).toHaveLength(1);
      expect(sealed.rows[0]!.sealed).not.toContain('sk-svc');
      // Another session of the same owner cannot read it.
      const other = await signIn(t, t.walletId);
      expect(await (await other.get('/dashboard/management-keys/created')).text()).not.toContain('sk-svcm-');
      expect(await (await owner.follow(mk)).text()).toMatch(/sk-svcm-/);
    });

    it('raising a monthly limit lifts a 429 at once; closing a key refuses it at once', async () => {
      const made = await (
        await owner.follow(await owner.post('/dashboard/keys', { count: '1', name: 'capped', monthly_limit_credits: '1' }))
      ).text();
      const key = /id="new-key-0">(sk-svc-[A-Za-z0-9]+)</.exec(made)![1]!;
      const id = /<tr data-key-id="([^"]+)">/.exec(made)![1];
      const refused = await chat(t, key);
      expect(refused.status).toBe(429);
      expect((await refused.json()).error.type).toBe('key_limit_exceeded');

      const raised = await owner.post(`/dashboard/keys/${id}`, {
        name: 'capped',
        monthly_limit_credits: '100000',
        daily_limit_credits: '',
        expires_on: '',
      });
      expect(raised.status).toBe(303);
      expect((await keyRows(t, t.walletId)).find((r) => r.id === id)?.monthly_limit_credits).toBe('100000');
      const passed = await chat(t, key);
      expect(passed.status, await passed.clone().text()).toBe(200);
      await settled(t, t.walletId);

      // The list's Close button only leads to a confirmation; a close without it changes nothing.
      const list = await (await owner.get('/dashboard/keys')).text();
      expect(list).toContain(`<form method="get" action="/dashboard/keys/${id}/close"><button type="submit">Close capped</button></form>`);
      const confirmPage = await (await owner.get(`/dashboard/keys/${id}/close`)).text();
      expect(confirmPage).toContain('is for good');
      expect(confirmPage).toContain('name="confirm" value="yes"');
      const unconfirmed = await owner.post(`/dashboard/keys/${id}/close`, {});
      expect(unconfirmed.status).toBe(303);
      expect(unconfirmed.headers.get('location')).toBe(`/dashboard/keys/${id}/close`);
      expect((await chat(t, key)).status).toBe(200);
      await settled(t, t.walletId);

      const closed = await owner.post(`/dashboard/keys/${id}/close`, { confirm: 'yes' });
      expect(closed.status).toBe(303);
      expect((await chat(t, key)).status).toBe(401);
      expect((await owner.post(`/dashboard/keys/${id}/close`, { confirm: 'yes' })).status).toBe(404); // already closed
    });

    it('another owner sees 404 for this wallet’s key ids, management key ids and generation ids', async () => {
      const other = await t.gw.ledger.createWallet({ credits: 1000, ownerId: 'someone-else' });
      const stranger = await signIn(t, other.id);
      const mine = (await keyRows(t, t.walletId)).find((r) => r.closed_at === null)!;
      const call = await chat(t, t.apiKey, 500);
      expect(call.status).toBe(200);
      await settled(t, t.walletId);
      const generationId = call.headers.get('x-request-id')!;
      expect((await owner.get(`/dashboard/usage/${generationId}`)).status).toBe(200);
      const mgmt = await t.gw.keys.createManagementKey(t.walletId, 'ops');

      expect((await stranger.get(`/dashboard/usage/${generationId}`)).status).toBe(404);
      expect((await stranger.post(`/dashboard/keys/${mine.id}`, { monthly_limit_credits: '1' })).status).toBe(404);
      expect((await stranger.post(`/dashboard/keys/${mine.id}/close`, { confirm: 'yes' })).status).toBe(404);
      expect((await stranger.post(`/dashboard/management-keys/${mgmt.id}/close`, { confirm: 'yes' })).status).toBe(404);
      const usage = await (await stranger.get(`/dashboard/usage?key=${mine.id}`)).text();
      expect(usage).not.toContain(generationId);
      // Nothing of ours changed.
      const after = (await keyRows(t, t.walletId)).find((r) => r.id === mine.id)!;
      expect(after.closed_at).toBeNull();
      expect(after.monthly_limit_credits).toBe(mine.monthly_limit_credits);
      expect((await t.gw.keys.authenticate(mgmt.key, 'management')).walletId).toBe(t.walletId);
      // And our own session still cannot use the stranger's CSRF token.
      expect((await owner.post('/dashboard/keys', { count: '1', name: 'x' }, { csrf: stranger.csrf })).status).toBe(403);
    });

    it('management keys: created once with a warning, closed from the page', async () => {
      const res = await owner.follow(await owner.post('/dashboard/management-keys', { name: 'server' }));
      expect(res.status).toBe(200);
      const page = await res.text();
      expect(page).toContain('Never put a management key in client code');
      const key = /id="new-management-key" data-key-id="([^"]+)">(sk-svcm-[A-Za-z0-9]+)</.exec(page)!;
      const list = await fetch(`${t.url}/v1/keys`, { headers: { authorization: `Bearer ${key[2]}` } });
      expect(list.status).toBe(200);
      expect(await (await owner.get('/dashboard/management-keys')).text()).toContain(`data-key-id="${key[1]}"`);
      expect((await owner.post(`/dashboard/management-keys/${key[1]}/close`, {})).headers.get('location')).toBe(
        `/dashboard/management-keys/${key[1]}/close`,
      );
      expect((await fetch(`${t.url}/v1/keys`, { headers: { authorization: `Bearer ${key[2]}` } })).status).toBe(200); // not closed yet
      expect(await (await owner.get(`/dashboard/management-keys/${key[1]}/close`)).text()).toContain('Yes, close server');
      expect((await owner.post(`/dashboard/management-keys/${key[1]}/close`, { confirm: 'yes' })).status).toBe(303);
      expect((await fetch(`${t.url}/v1/keys`, { headers: { authorization: `Bearer ${key[2]}` } })).status).toBe(401);
    });

    it('usage CSV carries the exact charges; key names cannot become spreadsheet formulas', async () => {
      const made = await (await owner.follow(await owner.post('/dashboard/keys', { count: '1', name: '=HYPERLINK("x")' }))).text();
      const key = /id="new-key-0">(sk-svc-[A-Za-z0-9]+)</.exec(made)![1]!;
      const res = await chat(t, key, 300);
      expect(res.status).toBe(200);
      await settled(t, t.walletId);
      const charged = res.headers.get('x-service-charged-nano')!;
      const id = res.headers.get('x-request-id')!;
      const csv = await owner.get('/dashboard/usage.csv');
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      const line = (await csv.text()).split('\r\n').find((l) => l.startsWith(`${id},`))!;
      expect(line).toContain(`"'=HYPERLINK(""x"")"`);
      expect(line).toContain(`,${charged},`);
      const detail = await (await owner.get(`/dashboard/usage/${id}`)).text();
      expect(detail).toContain(`data-nano="${charged}"`);
    });

    it('bad input answers a 4xx page, never a 5xx, and changes nothing', async () => {
      const before = await keyRows(t, t.walletId);
      const send = (path: string, body: string, type = 'application/x-www-form-urlencoded') =>
        fetch(`${t.url}${path}`, { method: 'POST', redirect: 'manual', headers: { cookie: owner.cookie, 'content-type': type }, body });
      const csrf = `csrf=${encodeURIComponent(owner.csrf)}`;
      const cases: [string, Promise<Response>][] = [
        ['json body', send('/dashboard/keys', JSON.stringify({ csrf: owner.csrf, count: 1 }), 'application/json')],
        ['text body', send('/dashboard/keys', 'hello', 'text/plain')],
        ['NUL in a name', send('/dashboard/keys', `${csrf}&count=1&name=a%00b`)],
        ['NUL in a key id', send('/dashboard/keys/a%00b/close', `${csrf}&confirm=yes`)],
        ['NUL in a key id, to confirm', owner.get('/dashboard/keys/a%00b/close')],
        ['count not a number', send('/dashboard/keys', `${csrf}&count=three`)],
        ['expiry in the past', send('/dashboard/keys', `${csrf}&count=1&expires_on=2001-01-01`)],
        ['daily above monthly', send('/dashboard/keys', `${csrf}&count=1&monthly_limit_credits=5&daily_limit_credits=9`)],
        ['management key name too long', send('/dashboard/management-keys', `${csrf}&name=${'x'.repeat(41)}`)],
        ['offset not a number', owner.get('/dashboard/keys?offset=-1')],
        ['repeated filter', owner.get('/dashboard/usage?key=a&key=b')],
        ['unknown chart kind', owner.get('/dashboard/usage?by=vendor')],
        ['unknown page', owner.get('/dashboard/nothing-here')],
        ['unknown call id', owner.get('/dashboard/usage/nope')],
      ];
      for (const [name, pending] of cases) {
        const res = await pending;
        expect(res.status, name).toBeGreaterThanOrEqual(400);
        expect(res.status, name).toBeLessThan(500);
        expect(res.headers.get('content-type'), name).toMatch(/^text\/html/);
      }
      expect(await keyRows(t, t.walletId)).toEqual(before);
    });

    it('sign-out ends the session (the old cookie is refused); a change of owner ends every session', async () => {
      const second = await signIn(t, t.walletId);
      const out = await second.post('/dashboard/sign-out', {});
      expect(out.status).toBe(303);
      expect(out.headers.get('location')).toBe('/dashboard/signed-out');
      expect(out.headers.getSetCookie().map(cookieParts)).toContainEqual(
        expect.objectContaining({ name: 'gateway_dashboard', value: '', attributes: expect.objectContaining({ 'max-age': '0' }) }),
      );
      expect((await second.get('/dashboard/wallet')).status).toBe(401);
      expect((await owner.get('/dashboard/wallet')).status).toBe(200); // other sessions live on

      const changed = await fetch(`${t.url}/admin/v1/wallets/${t.walletId}/owner`, {
        method: 'POST',
        headers: { ...ADMIN, 'content-type': 'application/json' },
        body: JSON.stringify({ owner_id: 'new-owner' }),
      });
      expect(changed.status).toBe(200);
      expect((await owner.get('/dashboard/wallet')).status).toBe(401);
    });
  });
}
