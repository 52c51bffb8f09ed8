// Reloading the catalog and config while running: POST /admin/v1/reload (SIGHUP does the same, engine/main.ts),
// and the log line either way.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { describeReload } from '../catalog/reload-summary.ts';
import type { ReloadResult, Runtime } from '../catalog/runtime.ts';
import { errors } from '../core/errors.ts';
import { sendError } from '../http/reply-error.ts';
import { tokenMatches } from './routes.ts';

export function registerReloadRoute(
  app: FastifyInstance,
  reload: (log: FastifyBaseLogger) => ReloadResult,
  token: string,
  reloaded?: () => void,
) {
  app.post('/admin/v1/reload', async (req, reply) => {
    const given = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (!tokenMatches(given, token)) return sendError(reply, errors.authentication('A valid admin token is required.'));
    const result = reload(req.log);
    if (result.ok) reloaded?.();
    return reply.code(result.ok ? 200 : 400).send({ ok: result.ok, version: result.version, problems: result.problems });
  });
}

/** The reload log line, for SIGHUP and POST /admin/v1/reload alike: what changed, or why nothing did. */
/** A reload of `runtime` that `counted` hears of (the metrics) and that is logged to the log it is given. */
export function reloader(runtime: Runtime, counted: (result: ReloadResult) => void): (log: FastifyBaseLogger) => ReloadResult {
  return (log) => {
    const result = runtime.reload();
    counted(result);
    logReload(log, result);
    return result;
  };
}

export function logReload(log: FastifyBaseLogger, result: ReloadResult): void {
  if (!result.ok) {
    log.error({ problems: result.problems }, 'reload refused; the running catalog stays');
    return;
  }
  const changes = result.changes!;
  const line = `catalog and config reloaded (version ${result.version}): ${describeReload(changes)}`;
  if (changes.needsRestart.length) log.warn({ version: result.version, changes }, line);
  else log.info({ version: result.version, changes }, line);
}
