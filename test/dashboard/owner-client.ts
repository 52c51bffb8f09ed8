// An owner's browser in miniature for the dashboard's HTTP tests: it asks the admin API for a sign-in
// link, follows it, keeps the cookies (the session's, and the CSRF secret's the first signed-in page sets) and
// reads the CSRF token from the pages' forms.
import { expect } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { createSessionStore } from '../../engine/dashboard/sessions.ts';
import { walletsFor } from '../../engine/identity/managers.ts';
import { TEST_NOW, type TestGateway } from '../helpers/gateway.ts';

export const ADMIN = { authorization: 'Bearer test-admin-token' };

export interface OwnerClient {
  /** The Cookie header it sends: the session cookie and the CSRF secret's. */
  cookie: string;
  /** The Set-Cookie header the sign-in answered with. */
  setCookie: string;
  csrf: string;
  get(path: string): Promise<Response>;
  /** A form POST; `csrf: false` leaves the token out, `origin` sets the Origin header. */
  post(path: string, form: Record<string, string>, opts?: { csrf?: boolean | string; origin?: string }): Promise<Response>;
  /** The page a 303 leads to, as the browser would load it (post/redirect/get). */
  follow(res: Response): Promise<Response>;
}

export async function issueLink(t: TestGateway, walletId: string): Promise<{ url: string; expires_at: string }> {
  const res = await fetch(`${t.url}/admin/v1/wallets/${walletId}/sign-in-link`, { method: 'POST', headers: ADMIN });
  expect(res.status, await res.clone().text()).toBe(201);
  return res.json();
}

/** POSTs the sign-in form of a link the way the link's page does; the raw answer. */
export function redeem(t: TestGateway, url: string, headers: Record<string, string> = {}): Promise<Response> {
  const token = new URL(url).searchParams.get('token') ?? '';
  return fetch(`${t.url}/dashboard/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ token }).toString(),
    redirect: 'manual',
  });
}

export const csrfOf = (page: string): string => {
  const m = /name="csrf" value="([^"]+)"/.exec(page);
  if (!m) throw new Error('no CSRF field on the page');
  return m[1]!;
};

export async function signIn(t: TestGateway, walletId: string): Promise<OwnerClient> {
  const link = await issueLink(t, walletId);
  const res = await redeem(t, link.url);
  expect(res.status).toBe(303);
  const setCookie = res.headers.get('set-cookie') ?? '';
  const first = await fetch(`${t.url}/dashboard/wallet`, { headers: { cookie: setCookie.split(';')[0]! }, redirect: 'manual' });
  const csrf = csrfOf(await first.text());
  const cookie = [setCookie, ...first.headers.getSetCookie()].map((c) => c.split(';')[0]).join('; ');
  const get = (path: string) => fetch(`${t.url}${path}`, { headers: { cookie }, redirect: 'manual' });
  return {
    cookie,
    setCookie,
    csrf,
    get,
    follow: async (res) => {
      expect(res.status, await res.clone().text()).toBe(303);
      return get(res.headers.get('location')!);
    },
    post: (path, form, opts = {}) =>
      fetch(`${t.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...(opts.origin ? { origin: opts.origin } : {}) },
        body: new URLSearchParams({
          ...form,
          ...(opts.csrf === false ? {} : { csrf: typeof opts.csrf === 'string' ? opts.csrf : csrf }),
        }).toString(),
      }),
  };
}

/** A manager's browser (a teacher's): a session opened for them as sign-in would, with its CSRF cookie and token. */
export async function managerClient(t: TestGateway, walletId: string, identity: string) {
  const access = (await walletsFor(t.gw.db, identity, 'subject')).find((a) => a.walletId === walletId)!;
  const opened = (await createSessionStore(t.gw.db, fixedClock(TEST_NOW)).openFor(access, identity))!;
  const session = `gateway_dashboard=${opened.secret}`;
  const first = await fetch(`${t.url}/dashboard/keys`, { headers: { cookie: session } });
  expect(first.status).toBe(200);
  const csrf = csrfOf(await first.text());
  const cookie = [session, ...first.headers.getSetCookie().map((c) => c.split(';')[0])].join('; ');
  return {
    get: (path: string) => fetch(`${t.url}${path}`, { headers: { cookie }, redirect: 'manual' }),
    post: (path: string, form: Record<string, string>) =>
      fetch(`${t.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...form, csrf }).toString(),
      }),
  };
}

/** One Set-Cookie header taken apart: its name, value and attributes (names lower-cased, flags `true`), in any order. */
export function cookieParts(setCookie: string): { name: string; value: string; attributes: Record<string, string | true> } {
  const [pair, ...attrs] = setCookie.split(';').map((p) => p.trim());
  const i = pair!.indexOf('=');
  const attributes: Record<string, string | true> = {};
  for (const a of attrs) {
    const j = a.indexOf('=');
    if (j < 0) attributes[a.toLowerCase()] = true;
    else attributes[a.slice(0, j).toLowerCase()] = a.slice(j + 1);
  }
  return { name: pair!.slice(0, i), value: pair!.slice(i + 1), attributes };
}

/** The class a create form's 303 leads to (`/dashboard/groups/<id>?done=created`). */
export const createdClassId = (res: Response): string =>
  decodeURIComponent(new URL(res.headers.get('location')!, 'http://dashboard').pathname.split('/').pop()!);
