// What createGateway takes and what it hands back: the running gateway's parts, for `npm start` (main.ts),
// the operator's tools and the tests.
import type { FastifyInstance } from 'fastify';
import type { Simulator } from '../simulator/index.ts';
import type { FirstRun } from './admin/first-run-wallet.ts';
import type { Alerts } from './alerts/index.ts';
import type { VendorRoutes } from './calls/vendor-routes.ts';
import type { ReloadResult, Runtime } from './catalog/runtime.ts';
import type { Clock } from './core/clock.ts';
import type { VendorId } from './core/types.ts';
import type { Db } from './db/db.ts';
import type { Env, GatewayEnv } from './gateway-env.ts';
import type { LoggerChoice } from './http/logger.ts';
import type { KeyService } from './keys/index.ts';
import type { LedgerAuditor } from './money/audit.ts';
import type { BudgetLeases } from './money/leases.ts';
import type { Ledger } from './money/ledger.ts';
import type { GatewayMetrics } from './observe/metrics.ts';
import type { Telemetry } from './telemetry/sdk.ts';
import type { VideoService } from './videos/index.ts';

export interface GatewayOptions {
  /** The environment to start from (default process.env), read once by gatewayEnvFrom. */
  env?: Env;
  clock?: Clock;
  /** pino logger options (a `stream` to capture it), or false for none. */
  logger?: LoggerChoice;
  /** Run the sweeper of abandoned reservations (default true). */
  sweeper?: boolean;
  /** Told when POST /admin/v1/reload has reloaded this process, so a worker's peers reload too (GATEWAY_WORKERS). */
  onAdminReload?: (() => void) | undefined;
}

export interface RunningGateway {
  app: FastifyInstance;
  /** The start settings this gateway was made from. */
  env: GatewayEnv;
  runtime: Runtime;
  /** The database, for tests and the operator's tools. */
  db: Db;
  ledger: Ledger;
  keys: KeyService;
  routes: VendorRoutes;
  simulator: Simulator | null;
  simulatedVendors: VendorId[];
  /** Configuration problems that fail some calls but not the start (a vendor with routes and no credential). */
  warnings: string[];
  /**
   * Makes the first-run development wallet on an empty embedded database, once the port is bound (a start that
   * fails before then has printed no keys, so it must make none): `noWallet` when the database has none and this
   * start made none (PostgreSQL), and the banner says how to make one.
   */
  firstRun(): Promise<FirstRun>;
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
  /** `app.close()`: each room's hook, registered as it opened, ends it once nothing that uses it is left. */
  close(): Promise<void>;
}
