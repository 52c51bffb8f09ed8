// The session on the wire: the cookie, when it is Secure, and the checks every change must pass.
//
// Cookie: HttpOnly, SameSite=Strict, Path=/. It is Secure, and named with the `__Host-` prefix (which the
// browser honours only for Secure cookies without Domain), unless the request came over plain http to a
// loopback host (localhost, 127.0.0.1, [::1]): that is the only place a browser talks to the gateway
// without TLS and nobody else can see the traffic. A plain-http request from any other host gets a Secure
// cookie the browser will not send back over http, so the dashboard stays unusable until TLS is in front.
//
// CSRF: SameSite=Strict already keeps the cookie off cross-site requests; on top of that every POST of a
// signed-in page must carry the session's token in the hidden `csrf` field, and a request whose Origin (or
// Sec-Fetch-Site) says it came from another site is refused before the token is even looked at.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Actor, requestOrigin } from '../audit/trail.ts';
import { errors } from '../core/errors.ts';
import { requestSlot } from '../http/request-slots.ts';
import { localeOf, t } from './i18n.ts';
import type { OwnerSession } from './sessions.ts';

const SECURE_NAME = '__Host-gateway_dashboard';
const PLAIN_NAME = 'gateway_dashboard';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function hostName(host: string | undefined): string {
  if (!host) return '';
  const h = host.toLowerCase();
  return h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : h.split(':')[0];
}

/** Whether the cookie of this request must be Secure (see the header comment). */
export function needsSecureCookie(req: FastifyRequest): boolean {
  return req.protocol === 'https' || !LOOPBACK_HOSTS.has(hostName(req.headers.host));
}

function cookies(req: FastifyRequest): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const name = part.slice(0, i).trim();
    if (!out.has(name)) out.set(name, part.slice(i + 1).trim());
  }
  return out;
}

/** A cookie the request carries, by name (the first, when repeated). */
export const cookieValue = (req: FastifyRequest, name: string): string | undefined => cookies(req).get(name) || undefined;

/** The session secret the request carries, from the cookie its kind of origin uses. */
export function sessionSecretOf(req: FastifyRequest): string | undefined {
  return cookies(req).get(needsSecureCookie(req) ? SECURE_NAME : PLAIN_NAME) || undefined;
}

export function setSessionCookie(reply: FastifyReply, req: FastifyRequest, secret: string, maxAgeSeconds: number): void {
  const secure = needsSecureCookie(req);
  const name = secure ? SECURE_NAME : PLAIN_NAME;
  reply.header('set-cookie', `${name}=${secret}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`);
}

export function clearSessionCookie(reply: FastifyReply, req: FastifyRequest): void {
  const secure = needsSecureCookie(req);
  const name = secure ? SECURE_NAME : PLAIN_NAME;
  reply.header('set-cookie', `${name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`);
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

const sha = (s: string) => createHash('sha256').update(s).digest();

/** 403 unless the form carries this session's CSRF token. */
export function checkCsrf(req: FastifyRequest, session: OwnerSession): void {
  checkSameOrigin(req);
  const body = req.body as Record<string, unknown> | undefined;
  const given = typeof body?.csrf === 'string' ? body.csrf : '';
  if (given === '' || !timingSafeEqual(sha(given), sha(session.csrfToken))) {
    throw errors.forbidden(t(localeOf(req), 'error.csrf'));
  }
}

// The session each signed-in request carries, found once by the guard hook and read by the handlers.
const sessions = requestSlot<OwnerSession>('owner_session');

export function attachSession(req: FastifyRequest, session: OwnerSession): void {
  sessions.set(req, session);
}

/** The request's session; the guard hook has made sure there is one (401 otherwise). */
export function sessionOf(req: FastifyRequest): OwnerSession {
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
