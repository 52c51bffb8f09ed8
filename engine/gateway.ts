// Puts the gateway together from its environment; each room registers its own end on the app as it opens, so
// `app.close()` alone stops it. It only wires, so each feature lives in its room; `npm start` and the end-to-end
// tests both use it.
import { join } from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { isFromOperator } from './admin/admin-token.ts';
import { firstRunWallet } from './admin/first-run-wallet.ts';
import { registerReloadRoute, reloader } from './admin/reload-route.ts';
import { keyActionsOf, registerAdminRoutes } from './admin/routes.ts';
import { localAdminTokenFor } from './admin/running-gateway-file.ts';
import { alertBalance, toppedUpRearms } from './alert-wiring.ts';
import type { Alerts } from './alerts/index.ts';
import { createAlerts } from './alerts/index.ts';
import { callServing } from './call-wiring.ts';
import { vendorIdsOf, yamlDirsFrom } from './catalog/config.ts';
import { Runtime } from './catalog/runtime.ts';
import type { Clock } from './core/clock.ts';
import { systemClock } from './core/clock.ts';
import type { DisplayCurrency } from './core/money.ts';
import { registerDashboard } from './dashboard/routes.ts';
import { createSessionStore } from './dashboard/sessions.ts';
import { registerSignInLinkRoute } from './dashboard/sign-in-route.ts';
import type { Db } from './db/db.ts';
import { openDatabase } from './db/open.ts';
import type { GatewayEnv } from './gateway-env.ts';
import { gatewayEnvFrom } from './gateway-env.ts';
import type { OutcomeObserver } from './http/access-log.ts';
import { createGatewayApp } from './http/app.ts';
import { gatewayLogger } from './http/logger.ts';
import { IdentityProvider } from './identity/provider.ts';
import type { KeyService } from './keys/index.ts';
import { createKeyService, registerKeyRoutes } from './keys/index.ts';
import type { Ledger } from './money/ledger.ts';
import type { GatewayMoney } from './money/ledger-wiring.ts';
import { CHARGE_DRAIN_MS, gatewayMoney } from './money/ledger-wiring.ts';
import { GatewayMetrics } from './observe/metrics.ts';
import { registerOpsRoutes } from './observe/routes.ts';
import { registerOpenApiRoute } from './openapi/routes.ts';
import type { GatewayOptions, RunningGateway } from './running-gateway.ts';
import { startTelemetryIfAsked, stopTelemetry } from './telemetry/start.ts';
import { usageRowWriters } from './usage/records.ts';
import { startUsageRecordUpkeep } from './usage/retention.ts';
import { registerUsageRoutes } from './usage/routes.ts';
import type { VendorSide } from './vendor-wiring.ts';
import { openVendorSide } from './vendor-wiring.ts';
import type { VideoService } from './videos/index.ts';

export type { GatewayOptions, RunningGateway } from './running-gateway.ts';

export async function createGateway(opts: GatewayOptions = {}): Promise<RunningGateway> {
  // Before anything opens: YAML or a value the gateway cannot use stops the start cleanly. The YAML comes
  // first: the vendors whose GATEWAY_VENDOR_<X>_* settings are read are config/vendors.yaml's keys.
  const vars = opts.env ?? process.env;
  const runtime = new Runtime(yamlDirsFrom(vars));
  const env = gatewayEnvFrom(vars, vendorIdsOf(runtime.snapshot().config));
  const clock = opts.clock ?? systemClock;
  // The one log, made before anything that writes to it; the app is handed it.
  const logger = gatewayLogger(env.logLevel, opts.logger);
  // The app comes before the rooms, so each registers its own end on it as it opens (see openRooms). Its metrics
  // come with the money they read; no request is served before then.
  const observers: OutcomeObserver[] = [];
  const app = createGatewayApp(runtime, logger, observers);
  try {
    return await openRooms(app, { opts, runtime, env, clock, logger, observers });
  } catch (e) {
    // What opened before the failure closes again, in the same order as at a stop.
    await app.close().catch(() => undefined);
    throw e;
  }
}

/** What createGateway read before the rooms open. */
interface Start {
  opts: GatewayOptions;
  runtime: Runtime;
  env: GatewayEnv;
  clock: Clock;
  logger: FastifyBaseLogger;
  observers: OutcomeObserver[];
}

/**
 * Opens the rooms in order, each registering its end on the app as it opens, so `app.close()` alone stops the
 * gateway. Fastify runs onClose hooks in the reverse of their registration, once the server has stopped and every
 * request has ended (its preClose hooks, in order, before that): what opens first closes last, after everything
 * that uses it.
 */
async function openRooms(app: FastifyInstance, { opts, runtime, env, clock, logger, observers }: Start): Promise<RunningGateway> {
  const log = () => logger;
  const telemetry = await startTelemetryIfAsked(env.telemetry, log);
  // Last of all, the last spans, held up no longer than a charge's last chance.
  app.addHook('onClose', () => stopTelemetry(telemetry, CHARGE_DRAIN_MS));
  const embedded = !env.databaseUrl;
  const db = await openDatabase({ url: env.databaseUrl, dataDir: env.dataDir });
  app.addHook('onClose', () => db.close());
  // Charges the database has not taken are kept on this host's disk until it does (none kept with nothing on disk).
  const money = gatewayMoney(db, runtime, clock, log, env.dataDir === 'memory://' ? null : join(env.dataDir, 'charges'));
  // Just before the database closes: an audit still reading would fail on a closed database and warn for nothing.
  app.addHook('onClose', () => money.stopTimers());
  const { ledger, leases } = money;
  // A key change counts as applied here once this process's calls on leases are told per key (their limits count them).
  const keys = createKeyService(db, {
    clock,
    warn: (o, m) => logger.warn(o, m),
    beforeApplied: (target) => leases.book.keysChanged(target),
  });
  app.addHook('onClose', () => keys.close());
  await keys.ready();
  const vendors = await openVendorSide(env.vendors, runtime);
  app.addHook('onClose', () => vendors.close());
  const { routes, simulator, warnings } = vendors;
  await leases.listen();
  // billing.yaml's display currency in force: read per answer, page and event, so a reload changes the next one.
  const displayCurrency = () => runtime.snapshot().config.billing.display_currency ?? null;
  const alertOptions = { allowPrivate: env.webhooksAllowPrivate, currency: displayCurrency, balanceOf: alertBalance };
  const alerts = createAlerts({ db, clock, log, ...alertOptions });
  // The metrics read the leases, the charge writer and the ledger audit.
  const metrics = new GatewayMetrics({ db, runtime, leases: leases.book, charges: money.writer, ledgerAudit: money.audit });
  observers.push((outcome) => metrics.observe(outcome));
  const videoCharged = (vendor: string, nano: bigint) => metrics.chargedTo(vendor, nano);
  const calls = callServing({ env, runtime, clock, db, money, keys, alerts, vendors, telemetry, videoCharged, log });
  const { videos } = calls;
  const localAdminToken = localAdminTokenFor(embedded, env.dataDir);

  // The routes keep their order: GET /openapi.json lists them as they were registered.
  const reload = reloader(runtime, (result) => metrics.reloaded(result));
  const wiring = { db, runtime, clock, env, keys, ledger, alerts, vendors, calls, metrics, reload, displayCurrency, localAdminToken };
  await registerRoutes(app, { ...wiring, onAdminReload: opts.onAdminReload });
  await startWorkers(app, { db, runtime, clock, money, alerts, videos, sweeper: opts.sweeper !== false });

  return {
    app,
    env,
    runtime,
    db,
    ledger,
    keys,
    routes,
    simulator,
    warnings,
    localAdminToken,
    videos,
    metrics,
    telemetry,
    alerts,
    firstRun: () => firstRunWallet(db, ledger, keys, embedded),
    simulatedVendors: env.vendors.simulated,
    leases: leases.book,
    ledgerAudit: money.audit,
    reload: () => reload(app.log),
    close: () => app.close(),
  };
}

/** What the timers and workers are started with. */
interface Workers {
  db: Db;
  runtime: Runtime;
  clock: Clock;
  money: GatewayMoney;
  alerts: Alerts;
  videos: VideoService;
  sweeper: boolean;
}

/**
 * Timers and workers start once every route is in place. Their timers stop before the server does (preClose); the
 * money starts last, so its charges drain first once every call has ended, while the videos and alerts that hear
 * of them still run: their last checks and events still go out.
 */
async function startWorkers(app: FastifyInstance, { db, runtime, clock, money, alerts, videos, sweeper }: Workers): Promise<void> {
  const stopPruning = await startUsageRecordUpkeep(db, clock, () => runtime.snapshot().config.limits, app.log);
  app.addHook('preClose', async () => stopPruning());
  alerts.start();
  app.addHook('onClose', () => alerts.stop());
  videos.start(app.log);
  app.addHook('onClose', () => videos.stop());
  // A lot's expiry lowers the balance as a charge does: its wallet's balance thresholds are checked again.
  money.start(sweeper, usageRowWriters, (walletId) => alerts.watcher.charged(walletId));
  // Its timers stop as the stop begins (the audit then awaited before the database closes, above).
  app.addHook('preClose', async () => void money.stopTimers());
  // Every call has ended: charges still waiting for the database, and the leases' last draws, get a last chance.
  app.addHook('onClose', () => money.drain());
}

/** What the rooms' routes are registered with. */
interface RouteWiring {
  db: Db;
  runtime: Runtime;
  clock: Clock;
  env: GatewayEnv;
  keys: KeyService;
  ledger: Ledger;
  alerts: Alerts;
  vendors: VendorSide;
  calls: ReturnType<typeof callServing>;
  metrics: GatewayMetrics;
  reload: ReturnType<typeof reloader>;
  displayCurrency: () => DisplayCurrency | null;
  localAdminToken: string | null;
  onAdminReload?: (() => void) | undefined;
}

/** Every room's routes, in the order GET /openapi.json lists them. */
async function registerRoutes(app: FastifyInstance, w: RouteWiring): Promise<void> {
  const { db, runtime, clock, env, keys, ledger, alerts, vendors, calls, metrics, displayCurrency } = w;
  const { warnings } = vendors;
  const credentials = { adminToken: env.adminToken, localToken: w.localAdminToken ?? undefined };
  for (const warning of warnings) app.log.warn({ warning }, warning);
  registerOpsRoutes(app, { db, runtime, metrics, metricsAccess: env.metricsAccess, warnings, vendors: vendors.summary });
  calls.registerDoors(app);
  await registerKeyRoutes(app, { keys, db, clock });
  await registerAdminRoutes(app, {
    ledger: toppedUpRearms(ledger, alerts),
    db,
    clock,
    displayCurrency,
    ...credentials,
    ...keyActionsOf(keys, db, clock),
  });
  if (env.adminToken) registerReloadRoute(app, w.reload, env.adminToken, w.onAdminReload);
  const sessions = createSessionStore(db, clock);
  await registerSignInLinkRoute(app, { sessions, publicUrl: env.publicUrl, ...credentials });
  await calls.videos.routes(app);
  await alerts.routes(app, keys);
  registerUsageRoutes(app, { accounts: calls.accounts, db });
  registerOpenApiRoute(app, { runtime, fromOperator: isFromOperator(credentials) });
  const identity = env.oidc ? new IdentityProvider(env.oidc) : undefined;
  await registerDashboard(app, {
    db,
    ledger,
    keys,
    clock,
    sessions,
    videos: calls.videos.store,
    publicUrl: env.publicUrl,
    identity,
    alerts,
    displayCurrency,
  });
}
