// What answers a request no route serves. A client whose base URL lost or doubled its `/v1` is told so, since that
// is the commonest setup mistake with the OpenAI and Anthropic clients.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.ts';
import type { BodyForPath } from './early-errors.ts';
import { sendError } from './reply-error.ts';
import { registeredRoutes } from './route-list.ts';

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1f4e79"/><path d="M9 22V10h4l3 6 3-6h4v12h-3v-7l-3 6h-2l-3-6v7z" fill="#fff"/></svg>`;

const HOME = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>AI gateway</title><link rel="icon" href="/favicon.ico"><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1b2733}a{color:#1f4e79}</style></head>
<body><h1>AI gateway</h1><p>One base URL and one key for five model vendors, paid from prepaid credits.</p>
<ul><li><a href="/dashboard">Dashboard</a>: wallet owners sign in here.</li><li><a href="/openapi.json">API description</a> (OpenAPI 3.1).</li></ul>
<p>Clients: OpenAI SDKs use the base URL <code>/v1</code>, Anthropic SDKs the base URL itself.</p></body></html>`;

/** `bodyFor`: a path under a door's (`/v1/messages/count_tokens`) is told in that door's error body, as its SDK reads it. */
export function notFoundHandler(app: FastifyInstance, bodyFor: BodyForPath) {
  return (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0]!;
    if (req.method === 'GET' && path === '/') return home(req, reply);
    if (req.method === 'GET' && path === '/favicon.ico')
      return reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(ICON);
    const meant = withV1Fixed(app, req.method, path);
    const hint = meant
      ? ` Did you mean ${req.method} ${meant}? ${meant.length > path.length ? "An OpenAI client's base URL ends in /v1" : 'The base URL has /v1 twice'}.`
      : '';
    return sendError(reply, errors.notFound(`No door at ${req.method} ${path}.${hint}`), bodyFor(path));
  };
}

function home(req: FastifyRequest, reply: FastifyReply) {
  if ((req.headers.accept ?? '').includes('text/html')) return reply.type('text/html; charset=utf-8').send(HOME);
  return reply.send({ object: 'service', dashboard: '/dashboard', api_description: '/openapi.json' });
}

/** The path a request would have reached with `/v1` added or its doubled `/v1` removed, when a route serves it. */
function withV1Fixed(app: FastifyInstance, method: string, path: string): string | undefined {
  const candidate = path.startsWith('/v1/v1/') ? path.slice(3) : path.startsWith('/v1/') ? undefined : `/v1${path}`;
  if (!candidate) return undefined;
  const served = registeredRoutes(app).some((r) => r.method === method && routePattern(r.url).test(candidate));
  return served ? candidate : undefined;
}

/** Fastify's `/v1/videos/:id` as a pattern matching `/v1/videos/abc`. */
const routePattern = (url: string): RegExp =>
  new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}$`);
