// What each role may do, in one table the session guard checks before every signed-in route's handler: pages
// hiding what a role cannot do is a courtesy, this refuses a forged POST. Keyed by route rather than URL prefix, so
// a new route is the owner's alone until someone decides otherwise (test/dashboard/managers.test.ts checks it).
import type { FastifyRequest } from 'fastify';
import { errors } from '../core/errors.ts';
import type { Role } from '../identity/managers.ts';
import { localeOf, type MessageKey, t } from './i18n.ts';
import { sessionOf } from './session-http.ts';

/** `read`: every role; `keys`: API keys and their usage (manager and owner); `owner`: the owner's alone. */
type Permission = 'read' | 'keys' | 'owner';

const ROLES_FOR: Record<Permission, readonly Role[]> = {
  read: ['owner', 'manager', 'viewer'],
  keys: ['owner', 'manager'],
  owner: ['owner'],
};

export const ROUTE_PERMISSIONS: Readonly<Record<string, Permission>> = {
  'GET /dashboard': 'read',
  'GET /dashboard/wallet': 'read',
  'GET /dashboard/keys': 'read',
  'POST /dashboard/keys': 'keys',
  'GET /dashboard/keys/created': 'keys',
  // A refused form leaves its POST address in the browser; reloading it goes back to the page it came from.
  'GET /dashboard/keys/:id': 'read',
  'POST /dashboard/keys/:id': 'keys',
  'GET /dashboard/keys/:id/close': 'keys',
  'POST /dashboard/keys/:id/close': 'keys',
  // Classes (key groups): reading them is reading; making and changing them is managing keys; who teaches a
  // class is the owner's, as who may come in is. A teacher's routes are narrowed further (group-scope.ts).
  'GET /dashboard/groups': 'read',
  'POST /dashboard/groups': 'keys',
  'GET /dashboard/groups/:id': 'read',
  'POST /dashboard/groups/:id': 'keys',
  'GET /dashboard/groups/:id/delete': 'keys',
  'POST /dashboard/groups/:id/delete': 'keys',
  'GET /dashboard/groups/:id/keys': 'read',
  'POST /dashboard/groups/:id/keys': 'keys',
  'POST /dashboard/groups/:id/teachers': 'owner',
  'GET /dashboard/groups/:id/usage.csv': 'read',
  // Listing management keys is reading; making and closing them is the owner's (they act for the owner).
  'GET /dashboard/management-keys': 'read',
  'POST /dashboard/management-keys': 'owner',
  'GET /dashboard/management-keys/created': 'owner',
  'GET /dashboard/management-keys/:id/close': 'owner',
  'POST /dashboard/management-keys/:id/close': 'owner',
  // Usage, its CSV export and one call's detail only read.
  'GET /dashboard/usage': 'read',
  'GET /dashboard/usage.csv': 'read',
  'GET /dashboard/usage-summary.csv': 'read',
  'GET /dashboard/usage/:id': 'read',
  'GET /dashboard/videos': 'read',
  'GET /dashboard/audit': 'read',
  // Who may come in is the owner's business: the list names people, so it is not shown to others either.
  'GET /dashboard/managers': 'owner',
  'POST /dashboard/managers': 'owner',
  'POST /dashboard/managers/remove': 'owner',
  // Alerts and webhooks: where the wallet's events go (the owner's systems) and the signing secret shown once.
  'GET /dashboard/webhooks': 'owner',
  'GET /dashboard/webhooks/thresholds': 'owner',
  'POST /dashboard/webhooks': 'owner',
  'POST /dashboard/webhooks/thresholds': 'owner',
  'POST /dashboard/webhooks/:id/delete': 'owner',
  'POST /dashboard/webhooks/:id/events/:event/replay': 'owner',
  'POST /dashboard/sign-out': 'read',
  // The signed-in 404 page.
  'GET /dashboard/*': 'read',
  'POST /dashboard/*': 'read',
};

/** The permission a route needs; HEAD is its GET. */
export function permissionOf(method: string, routeUrl: string): Permission {
  const m = method === 'HEAD' ? 'GET' : method;
  return ROUTE_PERMISSIONS[`${m} ${routeUrl}`] ?? 'owner';
}

const mayDo = (role: Role, permission: Permission): boolean => ROLES_FOR[permission].includes(role);

/** Whether the signed-in session may do this: for pages deciding which forms and buttons to show. */
export const sessionMay = (req: FastifyRequest, permission: Permission): boolean => mayDo(sessionOf(req).role, permission);

/** What a refusal says, in the request's language (the catalogs' `role.refused.*`). */
const SAY: Record<Permission, MessageKey> = { read: 'role.refused.read', keys: 'role.refused.keys', owner: 'role.refused.owner' };

/** 403 unless the session's role may use the route the request matched. */
export function checkRole(req: FastifyRequest): void {
  const permission = permissionOf(req.method, req.routeOptions.url ?? '');
  if (!mayDo(sessionOf(req).role, permission)) throw errors.forbidden(t(localeOf(req), SAY[permission]));
}
