// The session on the wire: the cookies, when they are Secure, and the checks every change must pass.
// Cookies are parsed and written by @fastify/cookie, registered in the dashboard's scope only (registerCookies),
// so the API doors (/v1/*) parse none; nothing is signed with it, since no dashboard cookie is a value the
// server must trust as sent: the session cookie is a random secret looked up (hashed) in the database, the
// identity provider's flow cookie is sealed (encrypted, not only signed: it holds the PKCE verifier), and the
// language is no secret.
//
// Session cookie: HttpOnly, SameSite=Strict, Path=/. It is Secure, and named with the `__Host-` prefix (which
// the browser honours only for Secure cookies without Domain), unless the request came over plain http to a
// loopback host (localhost, 127.0.0.1, [::1]): that is the only place a browser talks to the gateway without
// TLS and nobody else can see the traffic. A plain-http request from any other host gets a Secure cookie the
// browser will not send back over http, so the dashboard stays unusable until TLS is in front.
//
// CSRF: SameSite=Strict already keeps the cookie off cross-site requests; on top of that a request whose
// Origin (or Sec-Fetch-Site) says it came from another site is refused, and then every POST of a signed-in page
// must carry a token in the hidden `csrf` field that @fastify/csrf-protection made for this browser and this
// session: its secret is in the `gateway_csrf` cookie (HttpOnly, SameSite=Strict, Secure as above; one name
// for every request, the plugin's cookie name being fixed, so no `__Host-` prefix), and each token is bound
// (the plugin's userInfo) to the session's own random value, kept server-side in dashboard_sessions, so a
// token is good for one session only and a cookie planted from elsewhere cannot make one.
import fastifyCookie, { type CookieSerializeOptions } from '@fastify/cookie';
import fastifyCsrfProtection from '@fastify/csrf-protection';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Actor, requestOrigin } from '../audit/trail.ts';
import { errors } from '../core/errors.ts';
import { requestSlot } from '../http/request-slots.ts';
import { localeOf, t } from './i18n.ts';
import type { OwnerSession } from './sessions.ts';

const SECURE_NAME = '__Host-gateway_dashboard';
const PLAIN_NAME = 'gateway_dashboard';
const CSRF_COOKIE = 'gateway_csrf';

/**
 * The plugin wants an HMAC key whenever tokens are bound to a user (userInfo) and its secret is in a cookie,
 * since userInfo is usually a public user id. Ours is the session's random value the browser never sees, so
 * the key needs no secrecy; it must only be the same in every gateway process, as any process serves a form.
 */
const CSRF_HMAC_KEY = 'gateway-dashboard-csrf';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function hostName(host: string | undefined): string {
  if (!host) return '';
  const h = host.toLowerCase();
  return h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : h.split(':')[0]!;
}

/** Whether the cookies of this request must be Secure (see the header comment). */
export function needsSecureCookie(req: FastifyRequest): boolean {
  return req.protocol === 'https' || !LOOPBACK_HOSTS.has(hostName(req.headers.host));
}

/** The attributes of a dashboard cookie set in answer to this request (Max-Age is the caller's). */
export const cookieOptions = (req: FastifyRequest, sameSite: 'strict' | 'lax', httpOnly = true): CookieSerializeOptions => ({
  path: '/',
  httpOnly,
  sameSite,
  secure: needsSecureCookie(req),
});

const sessionCookieName = (req: FastifyRequest) => (needsSecureCookie(req) ? SECURE_NAME : PLAIN_NAME);

/** The session secret the request carries, from the cookie its kind of origin uses. */
export function sessionSecretOf(req: FastifyRequest): string | undefined {
  return req.cookies[sessionCookieName(req)] || undefined;
}

export function setSessionCookie(reply: FastifyReply, req: FastifyRequest, secret: string, maxAgeSeconds: number): void {
  reply.setCookie(sessionCookieName(req), secret, { ...cookieOptions(req, 'strict'), maxAge: maxAgeSeconds });
}

/** Sign-out: the session's cookie goes, and the CSRF secret's with it (a next session starts from a new one). */
export function clearSessionCookies(reply: FastifyReply, req: FastifyRequest): void {
  reply.clearCookie(sessionCookieName(req), cookieOptions(req, 'strict'));
  reply.clearCookie(CSRF_COOKIE, cookieOptions(req, 'strict'));
}

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/** 403 when the browser says the request came from another site (Origin host differs, or Sec-Fetch-Site cross-site). */
export function checkSameOrigin(req: FastifyRequest): void {
  const site = first(req.headers['sec-fetch-site']);
  if (site === 'cross-site' || site === 'same-site') throw errors.forbidden(t(localeOf(req), 'error.other_site'));
  const origin = first(req.headers.origin);
  if (origin === undefined) return; // older browsers and non-browser clients; the CSRF token still guards
  let originHost: string | null;
  try {
    originHost = origin === 'null' ? null : new URL(origin).host.toLowerCase();
  } catch {
    originHost = null;
  }
  if (originHost === null || originHost !== (req.headers.host ?? '').toLowerCase()) {
    throw errors.forbidden(t(localeOf(req), 'error.other_origin'));
  }
}

/**
 * @fastify/cookie and @fastify/csrf-protection, for the dashboard's scope (its encapsulated plugin, so the rest
 * of the gateway has neither). The token comes from the forms' `csrf` field only (not the plugin's headers: the
 * dashboard has no scripts), bound to the session's value (see the header comment).
 */
export async function registerCookies(scope: FastifyInstance): Promise<void> {
  await scope.register(fastifyCookie);
  await scope.register(fastifyCsrfProtection, {
    cookieKey: CSRF_COOKIE,
    cookieOpts: { path: '/', httpOnly: true, sameSite: 'strict' },
    getToken: (req) => {
      const given = (req.body as Record<string, unknown> | undefined)?.csrf;
      return typeof given === 'string' ? given : undefined;
    },
    getUserInfo: (req) => sessions.get(req)?.csrfBinding ?? '',
    csrfOpts: { userInfo: true, hmacKey: CSRF_HMAC_KEY },
  });
}

/** The plugin's refusals (no secret cookie, or a token missing, wrong or from another session or browser). */
export const isCsrfRefusal = (err: unknown): boolean => {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'FST_CSRF_MISSING_SECRET' || code === 'FST_CSRF_INVALID_TOKEN';
};

/** A guarded preHandler: a change must come from this site, then carry this session's token (403 otherwise). */
export function checkCsrf(scope: FastifyInstance) {
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (req.method === 'GET' || req.method === 'HEAD') return done();
    try {
      checkSameOrigin(req);
    } catch (e) {
      return done(e as Error);
    }
    scope.csrfProtection(req, reply, done);
  };
}

// The session each signed-in request carries, found once by the guard hook and read by the handlers.
const sessions = requestSlot<SignedInSession>('owner_session');

/** A session as the request's pages see it: with the CSRF token their forms carry. */
export interface SignedInSession extends OwnerSession {
  csrfToken: string;
}

/** Keeps the session for the request's handlers, with a CSRF token for its forms (and the secret's cookie, when new). */
export function attachSession(req: FastifyRequest, reply: FastifyReply, session: OwnerSession): void {
  const csrfToken = reply.generateCsrf({ userInfo: session.csrfBinding, secure: needsSecureCookie(req) });
  sessions.set(req, { ...session, csrfToken });
}

/** The request's session; the guard hook has made sure there is one (401 otherwise). */
export function sessionOf(req: FastifyRequest): SignedInSession {
  const s = sessions.get(req);
  if (!s) throw errors.authentication(t(localeOf(req), 'error.sign_in_first'));
  return s;
}

/**
 * Who made a change through the dashboard, and where the browser's request came from: the audit trail's `who`.
 * The owner (link or provider sign-in) by owner id; a manager by the identity the provider vouched for.
 */
export function ownerActor(req: FastifyRequest): Actor {
  const s = sessionOf(req);
  return s.isManager ? { kind: 'manager', id: s.actorId, ...requestOrigin(req) } : { kind: 'owner', id: s.ownerId, ...requestOrigin(req) };
}
