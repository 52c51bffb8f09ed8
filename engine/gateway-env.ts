// The environment the gateway starts from (README "Configuration", operations.md), read once into typed
// values: each variable parsed here with its default, or by the parser of the room that owns it. A value the
// gateway cannot use stops the start here with a SettingError naming the variable, before anything opens.

import { allowPrivateFrom } from './alerts/index.ts';
import { type VendorSettings, vendorSettingsFrom } from './calls/vendor-routes.ts';
import { yamlDirsFrom } from './catalog/config.ts';
import { isHttpAddress, SettingError } from './core/setting-error.ts';
import type { VendorId } from './core/types.ts';
import { redactUrl } from './db/scratch-schema.ts';
import { type ProviderSettings, providerSettings } from './identity/provider.ts';
import { type MetricsAccess, metricsAccessFrom } from './observe/routes.ts';
import { type TelemetryConfig, telemetryConfig } from './telemetry/config.ts';
import { videoPollMs } from './videos/index.ts';
import { type VideoStoreSetting, videoStoreFromEnv } from './videos/video-store-setting.ts';

export type Env = Record<string, string | undefined>;

export interface GatewayEnv {
  /** HOST: the address `npm start` listens on (default 127.0.0.1). */
  host: string;
  /** PORT (default 8080; 0 takes a free port). */
  port: number;
  /** DATABASE_URL: a PostgreSQL server; unset or empty, the embedded database in `dataDir`. */
  databaseUrl: string | undefined;
  /** GATEWAY_DATA_DIR (default ./data; `memory://` keeps nothing on disk). */
  dataDir: string;
  /** GATEWAY_CONFIG_DIR (default ./config) and GATEWAY_CATALOG_DIR (default ./catalog). */
  configDir: string;
  catalogDir: string;
  /** GATEWAY_ADMIN_TOKEN; unset or empty, the admin API answers only this start's own credential. */
  adminToken: string | undefined;
  /** GATEWAY_PUBLIC_URL: where sign-in links point; unset or empty, this host's own address. */
  publicUrl: string | undefined;
  /** LOG_LEVEL (default info). */
  logLevel: string;
  /** GATEWAY_VENDOR_<X>_URLS and _KEY for each vendor of config/vendors.yaml, GATEWAY_SIMULATE (calls/vendor-routes.ts). */
  vendors: VendorSettings;
  /** GATEWAY_VIDEO_STORE and the AWS_* variables of a bucket (videos/video-store-setting.ts). */
  videoStore: VideoStoreSetting;
  /** GATEWAY_VIDEO_POLL_MS: how often the video worker looks for due jobs. */
  videoPollMs: number;
  /** GATEWAY_METRICS_TOKEN and GATEWAY_METRICS_OPEN (observe/routes.ts). */
  metricsAccess: MetricsAccess;
  /** GATEWAY_OIDC_*: sign-in with the school's identity provider, or null (identity/provider.ts). */
  oidc: ProviderSettings | null;
  /** GATEWAY_WEBHOOKS_ALLOW_PRIVATE: webhook receivers on private addresses (alerts/index.ts). */
  webhooksAllowPrivate: boolean;
  /** OTEL_EXPORTER_OTLP_* and friends: traces, or null when no endpoint is set (telemetry/config.ts). */
  telemetry: TelemetryConfig | null;
  /** GATEWAY_WORKER_INDEX: set by the primary of GATEWAY_WORKERS for each worker it starts; null alone. */
  workerIndex: number | null;
}

/** A variable set to nothing (`HOST=` in a shell or a unit file) is read as unset, the one rule for every variable. */
const setVariables = (env: Env): Env => Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));

/** pino's levels: anything else would fail deep inside the logger. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Every start setting, parsed and checked; throws a SettingError naming the first variable it cannot use.
 * `vendors` are config/vendors.yaml's ids, the vendors whose GATEWAY_VENDOR_<X>_URLS and _KEY are read.
 */
export function gatewayEnvFrom(given: Env, vendors: readonly VendorId[]): GatewayEnv {
  const env = setVariables(given);
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new SettingError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, not '${logLevel}'`);
  const publicUrl = env.GATEWAY_PUBLIC_URL;
  if (publicUrl !== undefined && !isHttpAddress(publicUrl)) {
    throw new SettingError(`GATEWAY_PUBLIC_URL must be an http(s) address such as https://gateway.example.edu, not '${publicUrl}'`);
  }
  return {
    host: env.HOST ?? '127.0.0.1',
    port: portOf(env.PORT),
    databaseUrl: databaseUrlOf(env.DATABASE_URL),
    dataDir: env.GATEWAY_DATA_DIR ?? './data',
    configDir: yamlDirsFrom(env).config,
    catalogDir: yamlDirsFrom(env).catalog,
    adminToken: env.GATEWAY_ADMIN_TOKEN,
    publicUrl,
    logLevel,
    vendors: vendorSettingsFrom(env, vendors),
    videoStore: videoStoreFromEnv(env),
    videoPollMs: videoPollMs(env.GATEWAY_VIDEO_POLL_MS),
    metricsAccess: metricsAccessFrom(env),
    oidc: providerSettings(env),
    webhooksAllowPrivate: allowPrivateFrom(env),
    telemetry: telemetryConfig(env),
    workerIndex: workerIndexOf(env.GATEWAY_WORKER_INDEX),
  };
}

/** What `pg` can connect to: a postgres(ql):// or socket: URL, or a socket folder's path. The password never shows. */
function databaseUrlOf(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.startsWith('/')) return raw;
  let protocol = '';
  try {
    protocol = new URL(raw).protocol;
  } catch {
    // not a URL: refused below
  }
  if (!['postgres:', 'postgresql:', 'socket:'].includes(protocol)) {
    throw new SettingError(
      `DATABASE_URL must be a PostgreSQL address such as postgres://user:password@host:5432/gateway, not '${redactUrl(raw)}'`,
    );
  }
  return raw;
}

function portOf(raw: string | undefined): number {
  const port = Number(raw ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new SettingError(`PORT must be a whole number from 0 to 65535 (0 takes a free port), not '${raw}'`);
  }
  return port;
}

/** Set by the GATEWAY_WORKERS primary for each worker: a worker's number, or unset in a process of its own. */
function workerIndexOf(raw: string | undefined): number | null {
  if (raw === undefined || raw === '') return null;
  const index = Number(raw);
  if (!Number.isInteger(index) || index < 0) throw new SettingError(`GATEWAY_WORKER_INDEX must be a whole number, not '${raw}'`);
  return index;
}
