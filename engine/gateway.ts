// Puts the gateway together from its environment and closes it in reverse. It only wires, so each feature lives in
// its room; `npm start` and the end-to-end tests both use it.
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
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
import { closeApp, createGatewayApp } from './http/app.ts';
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
import type { Telemetry } from './telemetry/sdk.ts';
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
  // The one log, made before anything that writes to it; the app is handed it below.
  const logger = gatewayLogger(env.logLevel, opts.logger);
  const log = () => logger;
  const telemetry = await startTelemetryIfAsked(env.telemetry, log);
  const embedded = !env.databaseUrl;
  const db = await openDatabase({ url: env.databaseUrl, dataDir: env.dataDir });
  // Charges the database has not taken are kept on this host's disk until it does (none kept with nothing on disk).
  const money = gatewayMoney(db, runtime, clock, log, env.dataDir === 'memory://' ? null : join(env.dataDir, 'charges'));
  const { ledger, leases } = money;
  const keys = createKeyService(db, { clock, warn: (o, m) => logger.warn(o, m) });
  await keys.ready();
  const vendors = await openVendorSide(env.vendors, runtime);
  const { routes, simulator, warnings } = vendors;
  await leases.listen();
  // billing.yaml's display currency in force: read per answer, page and event, so a reload changes the next one.
  const displayCurrency = () => runtime.snapshot().config.billing.display_currency ?? null;
  const alertOptions = { allowPrivate: env.webhooksAllowPrivate, currency: displayCurrency, balanceOf: alertBalance };
  const alerts = createAlerts({ db, clock, log, ...alertOptions });
  const calls = callServing({ env, runtime, clock, db, money, keys, alerts, vendors, telemetry, log });
  const { videos } = calls;
  const localAdminToken = localAdminTokenFor(embedded, env.dataDir);

  // The app comes after the money (its metrics read the leases, the charge writer and the ledger audit), and its
  // routes keep their order: GET /openapi.json lists them as they were registered.
  const metrics = new GatewayMetrics({ db, runtime, leases: leases.book, charges: money.writer, ledgerAudit: money.audit });
  const app = createGatewayApp(runtime, logger, [(outcome) => metrics.observe(outcome)]);
  const reload = reloader(runtime, (result) => metrics.reloaded(result));
  await registerRoutes(app, {
    db,
    runtime,
    clock,
    env,
    keys,
    ledger,
    alerts,
    vendors,
    calls,
    metrics,
    reload,
    displayCurrency,
    localAdminToken,
    onAdminReload: opts.onAdminReload,
  });

  // Timers and workers start once every route is in place.
  const stopPruning = await startUsageRecordUpkeep(db, clock, () => runtime.snapshot().config.limits, app.log);
  // A lot's expiry lowers the balance as a charge does: its wallet's balance thresholds are checked again.
  money.start(opts.sweeper !== false, [keys.quota.useWriter, ...usageRowWriters], (walletId) => alerts.watcher.charged(walletId));
  videos.start(app.log);
  alerts.start();
  const firstRun = await firstRunWallet(db, ledger, keys, embedded);

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
    ...firstRun,
    simulatedVendors: env.vendors.simulated,
    leases: leases.book,
    ledgerAudit: money.audit,
    reload: () => reload(app.log),
    close: () => closeInReverse({ stopPruning, money, app, videos, alerts, vendors, keys, db, telemetry }),
  };
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

/** What createGateway opened that its close ends. */
interface Closing {
  stopPruning: () => void;
  money: GatewayMoney;
  app: FastifyInstance;
  videos: VideoService;
  alerts: Alerts;
  vendors: VendorSide;
  keys: KeyService;
  db: Db;
  telemetry: Telemetry | null;
}

/** Closes the gateway in the reverse of its opening, each part once nothing that uses it is left. */
async function closeInReverse({ stopPruning, money, app, videos, alerts, vendors, keys, db, telemetry }: Closing): Promise<void> {
  stopPruning();
  const auditEnded = money.stopTimers();
  await closeApp(app);
  await money.drain(); // every call has ended; charges still waiting for the database get a last chance
  await videos.stop();
  await alerts.stop(); // after the charges and videos: their last checks and events still go out
  await vendors.close();
  await keys.close();
  await auditEnded; // an audit still reading would fail on a closed database and warn for nothing
  await db.close();
  await stopTelemetry(telemetry, CHARGE_DRAIN_MS); // the last spans, held up no longer than a charge's last chance
}
