// `npm start`: serves the gateway on HOST:PORT until SIGTERM; SIGHUP reloads catalog and config. The pid goes
// to GATEWAY_DATA_DIR/gateway.pid, for `npx gateway reload`. With GATEWAY_WORKERS above 1 this process is the
// primary of that many gateway processes (engine/process/workers.ts), and each worker runs `serve` below.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import closeWithGrace from 'close-with-grace';
import { type FirstRun, firstRunBannerLines } from './admin/first-run-wallet.ts';
import { removeRunningGatewayFile, writeRunningGatewayFile } from './admin/running-gateway-file.ts';
import { vendorBannerLines } from './calls/vendor-routes.ts';
import { vendorIdsIn, yamlDirsFrom } from './catalog/config.ts';
import { formatWarning } from './catalog/model-warnings.ts';
import { describeReload } from './catalog/reload-summary.ts';
import { ConfigFileError } from './catalog/yaml-file.ts';
import { pidFilePath } from './core/pid-file.ts';
import { writeReloadReport } from './core/reload-report.ts';
import { SettingError } from './core/setting-error.ts';
import { DataFolderHeld } from './db/data-folder-lock.ts';
import { MigrationMismatch } from './db/migrate.ts';
import { createGateway, type RunningGateway } from './gateway.ts';
import { isWorker, superviseWorkers, workerLink, workersFromEnv } from './process/workers.ts';

function main(): void {
  const plan = workersFromEnv(process.env, configVendorIds);
  if ('problem' in plan) {
    console.error(`The gateway did not start: ${plan.problem}`);
    process.exit(1);
  }
  if (plan.workers === 1 || isWorker()) {
    void serve(isWorker() ? workerLink : null);
    return;
  }
  let pidFile = '';
  superviseWorkers(plan.workers, {
    exec: fileURLToPath(import.meta.url),
    ready(url) {
      pidFile = writePidFile();
      console.log(
        [`gateway listening on ${url}`, `database: PostgreSQL (DATABASE_URL)`, `${plan.workers} worker processes (GATEWAY_WORKERS)`].join(
          '\n',
        ),
      );
    },
    stopped: () => removePidFile(pidFile),
  });
}

/** config/vendors.yaml's vendor ids, for the primary's check of GATEWAY_WORKERS; YAML it cannot read stops the start. */
function configVendorIds(): string[] {
  try {
    return vendorIdsIn(yamlDirsFrom(process.env).config);
  } catch (e) {
    if (!(e instanceof ConfigFileError)) throw e;
    console.error(`The gateway did not start: the YAML has problems.\n${e.problems.join('\n')}`);
    process.exit(1);
  }
}

/** One gateway process: alone, or a worker that the primary started (`link`), which owns the pid file and the banner. */
async function serve(link: typeof workerLink | null): Promise<void> {
  let gw: RunningGateway;
  try {
    gw = await createGateway({ onAdminReload: link ? () => link.tell({ type: 'reloaded' }) : undefined });
  } catch (e) {
    if (e instanceof ConfigFileError) {
      console.error(`The gateway did not start: the YAML has problems.\n${e.problems.join('\n')}`);
    } else if (e instanceof SettingError) {
      console.error(`The gateway did not start: ${e.message}.`);
    } else if (e instanceof DataFolderHeld || e instanceof MigrationMismatch) {
      console.error(`The gateway did not start: ${e.message}`);
    } else {
      console.error(`The gateway did not start: ${(e as Error).stack ?? e}`);
    }
    process.exit(1);
  }
  const { host, port: asked, dataDir } = gw.env;
  try {
    await gw.app.listen({ host, port: asked });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
    // An operator's mistake, not a fault: one line, and the database let go before the exit.
    console.error(
      `The gateway did not start: port ${asked} on ${host} is already in use by another process. Stop that process, or set PORT to a free port.`,
    );
    await gw.close().catch(() => undefined);
    process.exit(1);
  }
  // The port bound, not the one asked for: PORT=0 takes a free one, and the banner and the operator CLI's file
  // must name where the gateway really answers.
  const port = (gw.app.server.address() as AddressInfo).port;
  if (link) {
    serveAsWorker(gw, link, `http://${host}:${port}`);
    return;
  }
  // Written before the banner, so anything that waits for the banner finds the pid file in place.
  const pidFile = writePidFile();
  // The operator CLI finds a gateway that holds the embedded database through this file, and goes through it.
  if (gw.localAdminToken)
    writeRunningGatewayFile(dataDir, {
      url: `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}`,
      pid: process.pid,
      admin_token: gw.localAdminToken,
    });
  printBanner(gw, `http://${host}:${port}`, await gw.firstRun());
  printCatalogWarnings(gw);
  printConfigWarnings(gw);

  process.on('SIGHUP', () => {
    gw.app.log.info({ signal: 'SIGHUP' }, 'SIGHUP received: reloading catalog and config');
    reloadAndReport(gw, process.pid);
  });
  // SIGHUP is skipped: it reloads (above), while close-with-grace would treat it as a stop.
  stopGracefully(gw, ['SIGHUP'], () => {
    removePidFile(pidFile);
    if (gw.localAdminToken) removeRunningGatewayFile(dataDir);
  });
}

/** A worker reloads when the primary forwards a reload, and stops when the primary says so. */
function serveAsWorker(gw: RunningGateway, link: typeof workerLink, url: string): void {
  const first = gw.env.workerIndex === 1;
  if (first) {
    printCatalogWarnings(gw);
    printConfigWarnings(gw);
  }
  // Every worker reads the same files; the first one answers the operator's SIGHUP, sent to the primary.
  link.onReload(() => (first ? reloadAndReport(gw, process.ppid) : gw.reload()));
  link.onMetricsCollect(() => gw.metrics.ownMetrics());
  gw.metrics.acrossWorkers(() => link.gatherMetrics());
  process.on('SIGHUP', () => gw.reload());
  const { close } = stopGracefully(gw, ['SIGHUP', 'SIGTERM', 'SIGINT'], () => undefined);
  link.onStop(close);
  link.tell({ type: 'listening', url });
}

/** Reloads, and leaves the result where `npx gateway reload` waits for it (a signal carries no answer). */
function reloadAndReport(gw: RunningGateway, pidInFile: number): void {
  const startedAt = Date.now();
  const result = gw.reload();
  const summary = result.changes ? describeReload(result.changes) : '';
  try {
    writeReloadReport(process.env, {
      pid: pidInFile,
      started_at: startedAt,
      ok: result.ok,
      version: result.version,
      problems: result.problems,
      summary,
    });
  } catch (e) {
    gw.app.log.warn({ err: e }, 'could not leave the reload result for npx gateway reload (the reload log line still says it)');
  }
}

/**
 * Calls in flight finish and settle (each bounded by its call limit), then the process exits; idle keep-alive
 * connections are closed at once (engine/http/app.ts), so they never hold it. Past the longest call limit
 * something is stuck, and the process exits anyway.
 */
function stopGracefully(gw: RunningGateway, skip: ('SIGHUP' | 'SIGTERM' | 'SIGINT')[], after: () => void): { close(): void } {
  const longestCallMs = Math.max(...Object.values(gw.runtime.snapshot().config.limits.call_timeout_ms));
  return closeWithGrace({ delay: longestCallMs + 5_000, logger: gw.app.log, skip }, async ({ signal, err }) => {
    if (err) gw.app.log.error({ err }, 'stopping after an unexpected error');
    else gw.app.log.info({ signal }, 'stopping: no new calls, finishing those in flight');
    await gw.close();
    after();
  });
}

/** Only the pid, so other tools can read it without parsing. */
function writePidFile(): string {
  const path = pidFilePath(process.env);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${process.pid}\n`);
  return path;
}

/** Removed only when it is still ours: a second gateway started on the same folder may have replaced it. */
function removePidFile(path: string): void {
  try {
    if (Number(readFileSync(path, 'utf8').trim()) === process.pid) rmSync(path);
  } catch {
    // Already gone.
  }
}

function printBanner(gw: RunningGateway, url: string, found: FirstRun): void {
  const lines = [`gateway listening on ${url}`];
  lines.push(...vendorBannerLines(gw.env.vendors, gw.simulator?.url));
  lines.push(`database: ${gw.env.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `embedded PGlite in ${gw.env.dataDir}`}`);
  lines.push(`video store: ${gw.videos.files.where} (GATEWAY_VIDEO_STORE)`);
  lines.push(...firstRunBannerLines(found, gw.runtime.snapshot().config.billing.display_currency ?? null));
  console.log(lines.join('\n'));
}

/** A vendor without a credential fails its calls, not the start: the operator reads it here, and on /readyz. */
function printConfigWarnings(gw: RunningGateway): void {
  for (const warning of gw.warnings) console.warn(`warning: ${warning}`);
}

/** Likely mistakes do not stop the start (a sale end that has come is normal), but the operator should see them. */
function printCatalogWarnings(gw: RunningGateway): void {
  const warnings = gw.runtime.snapshot().warnings;
  if (warnings.length === 0) return;
  console.warn(
    [`the catalog has ${warnings.length} warning(s) (npx gateway catalog check lists them too):`, ...warnings.map(formatWarning)].join(
      '\n',
    ),
  );
}

main();
