// The operator's doors: /healthz (the process serves), /readyz (the database answers and a catalog is
// loaded: a load balancer sends calls only then; a configuration problem that fails only some calls, such as a
// vendor without a credential, is listed in its `warnings` without taking the process out) and /metrics (Prometheus text). Health and readiness are
// open; the metrics reveal traffic and spend, so they are for loopback only, or for whoever holds
// GATEWAY_METRICS_TOKEN when one is set.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.ts';
import type { Db } from '../db/db.ts';
import type { Runtime } from '../catalog/runtime.ts';
import { sendError } from '../http/reply-error.ts';
import type { GatewayMetrics } from './metrics.ts';

/** Longer than a healthy database takes for `SELECT 1`, shorter than a probe's own timeout. */
const READY_TIMEOUT_MS = 1_000;

export interface OpsRoutesDeps {
  db: Db;
  runtime: Runtime;
  metrics: GatewayMetrics;
  /** When set, /metrics needs `Authorization: Bearer <token>` from anywhere; otherwise loopback only. */
  metricsToken?: string;
  /** Problems that do not stop calls everywhere but fail some (a vendor with no credential): /readyz names them. */
  warnings?: readonly string[];
}

export function registerOpsRoutes(app: FastifyInstance, deps: OpsRoutesDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_req, reply) => {
    const problem = await readinessProblem(deps);
    if (problem) return sendError(reply, errors.unavailable(`Not ready: ${problem}.`), 'chat');
    const warnings = deps.warnings ?? [];
    return { status: 'ready', catalog_version: deps.runtime.snapshot().version, ...(warnings.length ? { warnings } : {}) };
  });

  app.get('/metrics', async (req, reply) => {
    if (!mayReadMetrics(req.socket.remoteAddress, req.headers.authorization, deps.metricsToken)) {
      const why = deps.metricsToken ? 'a valid metrics token is required' : 'metrics are served to loopback only (set GATEWAY_METRICS_TOKEN to read them from elsewhere)';
      return sendError(reply, errors.forbidden(`Not allowed: ${why}.`), 'chat');
    }
    let text: string;
    try {
      text = await deps.metrics.exposition();
    } catch (err) {
      // Under GATEWAY_WORKERS a worker that does not answer fails the scrape: a partial sum would read as
      // counters going down.
      return sendError(reply, errors.unavailable(`Metrics unavailable: ${(err as Error).message}.`), 'chat');
    }
    return reply.header('content-type', deps.metrics.registry.contentType).send(text);
  });
}

async function readinessProblem({ db, runtime }: OpsRoutesDeps): Promise<string | null> {
  if (runtime.snapshot().catalog.models.size === 0) return 'no catalog is loaded';
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('the database did not answer in time'), READY_TIMEOUT_MS)));
  const ping = db.query('SELECT 1').then(
    () => null,
    () => 'the database is not reachable',
  );
  try {
    return await Promise.race([ping, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/**
 * Whether a scrape may read /metrics: with no token, only a loopback peer (the address the socket saw, not a
 * forwarded header a client can write); with a token, whoever sends it, loopback included.
 */
export function mayReadMetrics(remoteAddress: string | undefined, authorization: string | undefined, token: string | undefined): boolean {
  if (!token) return LOOPBACK.has(remoteAddress ?? '');
  const given = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1] ?? '';
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(token));
}
