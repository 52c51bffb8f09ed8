// The operator's doors: /healthz, /readyz (what a load balancer waits for) and /metrics. The metrics reveal traffic
// and spend, so they are closed unless opened by a token or GATEWAY_METRICS_OPEN=loopback; loopback is not the
// default because behind a reverse proxy on the same host every client comes from it.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../catalog/runtime.ts';
import { errors } from '../core/errors.ts';
import { SettingError } from '../core/setting-error.ts';
import type { Db } from '../db/db.ts';
import { sendError } from '../http/reply-error.ts';
import type { GatewayMetrics } from './metrics.ts';

/** Longer than a healthy database takes for `SELECT 1`, shorter than a probe's own timeout. */
const READY_TIMEOUT_MS = 1_000;

interface OpsRoutesDeps {
  db: Db;
  runtime: Runtime;
  metrics: GatewayMetrics;
  /** Who may read /metrics (metricsAccessFrom reads it from the environment). */
  metricsAccess: MetricsAccess;
  /** Problems that do not stop calls everywhere but fail some (a vendor with no credential): /readyz names them. */
  warnings?: readonly string[];
  /** Per vendor, its number of routes and whether the bundled simulator serves it: /readyz shows it, so an operator sees which vendors have none. */
  vendors?: Readonly<Record<string, { routes: number; simulated: boolean }>>;
}

/** Who may read /metrics: the holder of a token, and loopback peers when the operator opened it to them. */
export interface MetricsAccess {
  token?: string | undefined;
  openToLoopback: boolean;
}

/** The metrics access from GATEWAY_METRICS_TOKEN and GATEWAY_METRICS_OPEN; throws on a value it does not know. */
export function metricsAccessFrom(env: Record<string, string | undefined>): MetricsAccess {
  const open = env.GATEWAY_METRICS_OPEN ?? '';
  if (open !== '' && open !== 'loopback') {
    throw new SettingError(`GATEWAY_METRICS_OPEN must be 'loopback' or unset, not '${open}'`);
  }
  return { token: env.GATEWAY_METRICS_TOKEN || undefined, openToLoopback: open === 'loopback' };
}

export function registerOpsRoutes(app: FastifyInstance, deps: OpsRoutesDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_req, reply) => {
    const problem = await readinessProblem(deps);
    if (problem) return sendError(reply, errors.unavailable(`Not ready: ${problem}.`));
    const warnings = deps.warnings ?? [];
    return {
      status: 'ready',
      catalog_version: deps.runtime.snapshot().version,
      ...(deps.vendors ? { vendors: deps.vendors } : {}),
      ...(warnings.length ? { warnings } : {}),
    };
  });

  app.get('/metrics', async (req, reply) => {
    if (!mayReadMetrics(req.socket.remoteAddress, req.headers.authorization, deps.metricsAccess)) {
      return sendError(reply, errors.forbidden(`Not allowed: ${whyMetricsRefused(deps.metricsAccess)}.`));
    }
    let text: string;
    try {
      text = await deps.metrics.exposition();
    } catch (err) {
      // Under GATEWAY_WORKERS a worker that does not answer fails the scrape: a partial sum would read as
      // counters going down.
      return sendError(reply, errors.unavailable(`Metrics unavailable: ${(err as Error).message}.`));
    }
    return reply.header('content-type', deps.metrics.registry.contentType).send(text);
  });
}

async function readinessProblem({ db, runtime }: OpsRoutesDeps): Promise<string | null> {
  if (runtime.snapshot().catalog.models.size === 0) return 'no catalog is loaded';
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>(
    (resolve) => (timer = setTimeout(() => resolve('the database did not answer in time'), READY_TIMEOUT_MS)),
  );
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
 * Whether a scrape may read /metrics: whoever sends the token when one is set; a loopback peer (the address the
 * socket saw, not a forwarded header a client can write) only when the operator opened metrics to loopback.
 * Nobody otherwise.
 */
export function mayReadMetrics(remoteAddress: string | undefined, authorization: string | undefined, access: MetricsAccess): boolean {
  if (access.openToLoopback && LOOPBACK.has(remoteAddress ?? '')) return true;
  if (!access.token) return false;
  const given = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1] ?? '';
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(access.token));
}

function whyMetricsRefused(access: MetricsAccess): string {
  if (access.token) return 'a valid metrics token is required';
  return 'metrics are closed; the operator opens them with GATEWAY_METRICS_TOKEN, or with GATEWAY_METRICS_OPEN=loopback to loopback peers';
}
