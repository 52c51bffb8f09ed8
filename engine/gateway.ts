// Puts the gateway together from the environment (README "Configuration"): database, ledger, keys, routes
// (or the bundled simulator), the Fastify app. `npm start` and the end-to-end tests both use it.
import type { BudgetLeases } from './money/leases.ts';
import { gatewayLeases } from './money/lease-wiring.ts';
import { creditsOf } from './money/spendable.ts';
import { registerOpenApiRoute } from './openapi/routes.ts';
import { modelsCallerMayCall, suggestModel } from './calls/model-list.ts';
import { vendorRefusals } from './calls/vendor-refusals.ts';
import { logReload, registerReloadRoute } from './admin/reload-route.ts';
import { anyWallet, createDevWallet } from './admin/first-run-wallet.ts';
import { registerUsageRoutes } from './usage/routes.ts';
import { registerDashboard } from './dashboard/routes.ts';
import { createSessionStore } from './dashboard/sessions.ts';
import { registerSignInLinkRoute } from './dashboard/sign-in-route.ts';
import { IdentityProvider, providerSettings } from './identity/provider.ts';
import { startUsageRecordUpkeep } from './usage/retention.ts';
import { ChargeWriter } from './money/charge-writer.ts';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { registerAdminRoutes } from './admin/routes.ts';
import { newLocalAdminToken } from './admin/running-gateway-file.ts';
import { carriesAdminToken } from './admin/admin-token.ts';
import { systemClock, type Clock } from './core/clock.ts';
import type { Db } from './db/db.ts';
import { openDatabase } from './db/open.ts';
import type { ErrorShape } from './core/errors.ts';
import { closeManagementKey, createKeyService, registerKeyRoutes, type KeyService } from './keys/index.ts';
import { createOperatorKey } from './keys/manage.ts';
import { createLedger, type Ledger } from './money/ledger.ts';
import { DEFAULT_AUDIT_INTERVAL_MS, HOLD_GRACE_SWEEPS, LedgerAuditor } from './money/audit.ts';
import { databaseAuditTurn } from './money/audit-turn.ts';
import { DEFAULT_DRAW_FLUSH_MS, DEFAULT_WALLET_QUEUES } from './money/batch-queues.ts';
import { Runtime, type ReloadResult } from './catalog/runtime.ts';
import { registerModelDoors } from './calls/doors.ts';
import { closeApp, createApp } from './http/app.ts';
import { serverWithTimeouts } from './http/server-timeouts.ts';
import { GatewayMetrics } from './observe/metrics.ts';
import { metricsAccessFrom, registerOpsRoutes } from './observe/routes.ts';
import type { VendorId } from './core/types.ts';
import { UpstreamClient } from './calls/upstream.ts';
import { missingCredentials, planRoutes, routesFromEnv, type VendorRoutes } from './calls/vendor-routes.ts';
import { createWalletAccounts } from './money/wallet-accounts.ts';
import { createVideoService, videoPollMs, type VideoService } from './videos/index.ts';
import { videoStoreFromEnv } from './videos/video-store-setting.ts';
import * as registry from '../transforms/index.ts';
import type { Simulator } from '../simulator/index.ts';
import { telemetryConfig } from './telemetry/config.ts';
import type { Telemetry, TelemetryLog } from './telemetry/sdk.ts';
import { readFileSync } from 'node:fs';
import { projectPath } from './core/project-path.ts';
import { allowPrivateFrom, createAlerts, type Alerts } from './alerts/index.ts';
import { toppedUpRearms, videoFinished, watchedForAlerts } from './alert-wiring.ts';

type Env = Record<string, string | undefined>;

export interface GatewayOptions {
  env?: Env;
  clock?: Clock;
  /** pino logger options (a `stream` to capture it), or false for none. */
  logger?: boolean | { level?: string; stream?: { write(line: string): void } };
  /** Run the sweeper of abandoned reservations (default true). */
  sweeper?: boolean;
  /** Told when POST /admin/v1/reload has reloaded this process, so a worker's peers reload too (GATEWAY_WORKERS). */
  onAdminReload?: () => void;
}

export interface RunningGateway {
  app: FastifyInstance;
  runtime: Runtime;
  db: Db;
  ledger: Ledger;
  keys: KeyService;
  routes: VendorRoutes;
  simulator: Simulator | null;
  simulatedVendors: VendorId[];
  /** Configuration problems that fail some calls but not the start (a vendor with routes and no credential). */
  warnings: string[];
  /** A first-run development wallet, when this start created one. */
  devWallet: { walletId: string; apiKey: string; managementKey: string } | null;
  /** The database has no wallet at all, and this start made none (PostgreSQL): the banner says how to make one. */
  noWallet: boolean;
  /** The admin credential of this start for the operator tools (written to the data folder by main.ts), when embedded on disk. */
  localAdminToken: string | null;
  /** Video jobs: store, files and the polling worker. */
  videos: VideoService;
  metrics: GatewayMetrics;
  /** Re-reads catalog/ and config/ (SIGHUP, POST /admin/v1/reload): logged, and counted in the metrics. */
  reload(): ReloadResult;
  /** This process's budget leases (billing.yaml `leases`). */
  leases: BudgetLeases;
  /** The periodic ledger audit (billing.yaml `ledger.audit_interval_ms`); `run()` audits now. */
  ledgerAudit: LedgerAuditor;
  /** OpenTelemetry traces, when OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) is set; null otherwise. */
  telemetry: Telemetry | null;
  /** Threshold alerts and their webhook deliveries (engine/alerts). */
  alerts: Alerts;
  close(): Promise<void>;
}

export async function createGateway(opts: GatewayOptions = {}): Promise<RunningGateway> {
  const env = opts.env ?? process.env;
  const clock = opts.clock ?? systemClock;
  const runtime = new Runtime({ config: env.GATEWAY_CONFIG_DIR ?? './config', catalog: env.GATEWAY_CATALOG_DIR ?? './catalog' });
  // Before anything opens: a value they do not know stops the start cleanly.
  const videoStore = videoStoreFromEnv(env);
  const metricsAccess = metricsAccessFrom(env);
  const oidcSettings = providerSettings(env);
  const webhooksAllowPrivate = allowPrivateFrom(env);

  let appLog: FastifyBaseLogger | null = null;
  const telemetry = await startTelemetryIfAsked(env, () => appLog ?? silentLog);
  const embedded = !env.DATABASE_URL;
  const db = await openDatabase({ url: env.DATABASE_URL, dataDir: env.GATEWAY_DATA_DIR ?? './data' });
  const limits = runtime.snapshot().config.limits;
  const ledger = createLedger(db, {
    clock,
    log: { error: (o, m) => (appLog ?? silentLog).error(o, m) },
    reservationTtlMs: limits.reservation_ttl_ms,
    planVendors: () => runtime.snapshot().config.billing.plan_restricted_vendors,
    drawFlushMs: () => runtime.snapshot().config.billing.leases?.flush_ms ?? DEFAULT_DRAW_FLUSH_MS,
    walletQueues: () => runtime.snapshot().config.billing.ledger?.queues ?? DEFAULT_WALLET_QUEUES,
    flushWal: () => runtime.snapshot().config.billing.ledger?.synchronous_commit !== 'off',
  });
  const keys = createKeyService(db, { clock });
  await keys.ready();

  const { simulated } = planRoutes(env);
  const simulator = simulated.length ? await startBundledSimulator(runtime) : null;
  const routes = routesFromEnv(env, simulator ? (v) => simulator.routeUrl(v) : undefined);
  const upstream = new UpstreamClient({
    connectTimeoutMs: limits.connect_timeout_ms,
    connectionsPerOrigin: limits.vendor_connections,
    http2Streams: limits.vendor_http2_streams,
  });

  const writer = new ChargeWriter(() => appLog ?? silentLog);
  const leases = gatewayLeases(
    db,
    ledger,
    clock,
    () => runtime.snapshot().config.billing.leases,
    () => appLog ?? silentLog,
    writer,
  );
  await leases.listen();
  const alerts = createAlerts({ db, clock, allowPrivate: webhooksAllowPrivate, log: () => appLog ?? silentLog });
  const accounts = watchedForAlerts(
    alerts,
    createWalletAccounts({
      keys,
      ledger,
      db,
      clock,
      writer,
      leases: leases.deps,
      log: { error: (o, m) => (appLog ?? silentLog).error(o, m) },
      suggestModel: (m, vendors) => suggestModel(runtime, m, vendors, clock.now()),
    }),
  );
  const adminToken = env.GATEWAY_ADMIN_TOKEN || undefined;
  const dataDir = env.GATEWAY_DATA_DIR ?? './data';
  // Only an embedded database on disk needs the operator tools to come through this process.
  const localAdminToken = embedded && dataDir !== 'memory://' ? newLocalAdminToken() : null;
  const videos = createVideoService({
    db,
    accounts,
    runtime,
    routes,
    upstream,
    registry,
    clock,
    dataDir: env.GATEWAY_DATA_DIR ?? './data',
    fileStore: videoStore,
    pollMs: videoPollMs(env.GATEWAY_VIDEO_POLL_MS),
    telemetry,
    onFinished: (v) => videoFinished(alerts, v, () => appLog ?? silentLog),
  });
  const ledgerAudit = new LedgerAuditor({
    db,
    clock,
    holdGraceMs: HOLD_GRACE_SWEEPS * limits.sweep_interval_ms,
    log: () => appLog ?? silentLog,
    turn: databaseAuditTurn(db),
  });
  const metrics = new GatewayMetrics({ db, runtime, leases: leases.book, charges: writer, ledgerAudit });
  const app = createApp(
    {
      jsonMaxDepth: () => runtime.snapshot().config.limits.json_max_depth,
      errorShapeFor: (path) => errorShapeOfPath(runtime, path),
    },
    {
      bodyLimit: limits.body_limit_bytes,
      serverFactory: serverWithTimeouts({ requestTimeoutMs: limits.request_timeout_ms, headersTimeoutMs: limits.headers_timeout_ms }),
      logger:
        opts.logger === false
          ? false
          : { level: env.LOG_LEVEL ?? 'info', redact: REDACT, ...(typeof opts.logger === 'object' ? opts.logger : {}) },
    },
    [(outcome) => metrics.observe(outcome)],
  );
  const warnings = missingCredentials(env);
  for (const warning of warnings) app.log.warn({ warning }, warning);
  registerOpsRoutes(app, { db, runtime, metrics, metricsAccess, warnings });
  const reload = (log: FastifyBaseLogger) => {
    const result = runtime.reload();
    metrics.reloaded(result);
    logReload(log, result);
    return result;
  };
  appLog = app.log;
  registerModelDoors(app, {
    runtime,
    accounts,
    routes,
    upstream,
    registry,
    clock,
    credits: (walletId) => creditsOf(db, ledger, walletId),
    modelsFor: (caller) => modelsCallerMayCall(ledger, runtime, caller),
    telemetry,
  });
  await registerKeyRoutes(app, { keys, db, clock });
  await registerAdminRoutes(app, {
    ledger: toppedUpRearms(ledger, alerts),
    db,
    adminToken,
    localToken: localAdminToken ?? undefined,
    clock,
    createManagementKey: (walletId, name, actor) => keys.createManagementKey(walletId, name, actor),
    closeManagementKey: (walletId, keyId, actor) => closeManagementKey(keys, walletId, keyId, actor),
    createApiKey: (walletId, body, actor) => createOperatorKey({ keys, db, clock }, walletId, body, actor),
    onOwnerChanged: async (walletId) => {
      await keys.closeFormerOwnerManagementKeys(walletId);
    },
  });
  if (adminToken) registerReloadRoute(app, reload, adminToken, opts.onAdminReload);
  const sessions = createSessionStore(db, clock);
  await registerSignInLinkRoute(app, {
    sessions,
    adminToken,
    localToken: localAdminToken ?? undefined,
    publicUrl: env.GATEWAY_PUBLIC_URL || undefined,
  });
  await videos.routes(app);
  await alerts.routes(app, keys);
  registerUsageRoutes(app, { accounts, db });
  const adminTokens = [adminToken ?? '', localAdminToken ?? ''];
  registerOpenApiRoute(app, { runtime, fromOperator: (req) => carriesAdminToken(req.headers.authorization, adminTokens) });
  const identity = oidcSettings ? new IdentityProvider(oidcSettings) : undefined;
  await registerDashboard(app, {
    db,
    ledger,
    keys,
    clock,
    sessions,
    videos: videos.store,
    publicUrl: env.GATEWAY_PUBLIC_URL || undefined,
    identity,
    alerts,
  });
  const stopPruning = await startUsageRecordUpkeep(
    db,
    clock,
    () => runtime.snapshot().config.limits.usage_record_days,
    (e) => app.log.error({ err: e }, 'pruning usage records failed'),
    () => runtime.snapshot().config.limits.audit_record_days,
  );
  const sweepFailed = (e: unknown, expire?: { reservationId: string; walletId: string }) =>
    app.log.error({ err: e, ...expire }, expire ? 'sweep: expiring a reservation failed' : 'sweep failed');
  const stopSweeper =
    opts.sweeper === false ? () => undefined : ledger.startSweeper({ intervalMs: limits.sweep_interval_ms, onError: sweepFailed });
  ledgerAudit.start(runtime.snapshot().config.billing.ledger?.audit_interval_ms ?? DEFAULT_AUDIT_INTERVAL_MS);
  videos.start(app.log);
  alerts.start();
  const firstRun = !(await anyWallet(db));
  // A shared PostgreSQL gets no development wallet: its wallets are the operator's to make (the banner says how).
  const devWallet = embedded && firstRun ? await createDevWallet(ledger, keys) : null;

  return {
    app,
    runtime,
    db,
    ledger,
    keys,
    routes,
    simulator,
    simulatedVendors: simulated,
    warnings,
    devWallet,
    noWallet: firstRun && !devWallet,
    localAdminToken,
    videos,
    metrics,
    leases: leases.book,
    ledgerAudit,
    telemetry,
    alerts,
    reload: () => reload(app.log),
    async close() {
      stopSweeper();
      stopPruning();
      const auditEnded = ledgerAudit.stop();
      await closeApp(app);
      // Every call has ended; charges still waiting for the database get a last chance before it closes.
      await writer.drain(CHARGE_DRAIN_MS);
      await leases.book.close(CHARGE_DRAIN_MS);
      await videos.stop();
      await alerts.stop(); // after the charges and videos: their last checks and events still go out
      await upstream.close();
      await keys.close();
      await simulator?.close();
      await auditEnded; // an audit still reading would fail on a closed database and warn for nothing
      await db.close();
      // The last spans go out; an unreachable collector holds up a stop no longer than a charge's last chance.
      if (telemetry)
        await withinMs(
          telemetry.shutdown().catch(() => undefined),
          CHARGE_DRAIN_MS,
        );
    },
  };
}

const CHARGE_DRAIN_MS = 5_000;

const withinMs = (work: Promise<void>, ms: number) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    void work.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });

/** The SDK is loaded only when an OTLP endpoint is set (engine/telemetry/sdk.ts): off, a call pays one null check. */
async function startTelemetryIfAsked(env: Env, log: () => TelemetryLog): Promise<Telemetry | null> {
  const config = telemetryConfig(env);
  if (!config) return null;
  const { startTelemetry } = await import('./telemetry/sdk.ts');
  const { version } = JSON.parse(readFileSync(projectPath(import.meta.url, 'package.json'), 'utf8')) as { version: string };
  return startTelemetry(config, version, log);
}

const silentLog = { warn: () => undefined, error: () => undefined };

/** The error shape of the door whose path the (possibly malformed) path begins with, the longest such. */
function errorShapeOfPath(runtime: Runtime, path: string): ErrorShape {
  const doors = Object.values(runtime.snapshot().config.doors).filter((d) => path.startsWith(d.path));
  doors.sort((a, b) => b.path.length - a.path.length);
  return doors[0]?.errors ?? 'chat';
}

const REDACT = ['req.headers.authorization', 'req.headers["x-api-key"]', 'headers.authorization', 'headers["x-api-key"]'];

async function startBundledSimulator(runtime: Runtime): Promise<Simulator> {
  const { startSimulator } = await import('../simulator/index.ts');
  return startSimulator({ refuse: vendorRefusals(runtime) });
}
