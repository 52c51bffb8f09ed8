// Every variable the operator's documentation names (docs/operating.md "Configuration", README "Configuration",
// and the telemetry variables the gateway reads itself) is read at start: set to a usable value it changes what
// the gateway starts with, and where a value can be unusable, such a value stops the start naming the variable.
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SettingError } from '../../engine/core/setting-error.ts';
import { type GatewayEnv, gatewayEnvFrom } from '../../engine/gateway-env.ts';
import { workersFromEnv } from '../../engine/process/workers.ts';
import { VENDORS } from '../helpers/vendors.ts';

type Env = Record<string, string>;

interface Case {
  /** What else must be set for this variable to be read (a bucket's region is read only for a bucket). */
  with?: Env;
  /** A usable value, and a reading of the started settings that it changes. */
  valid: string;
  read: (env: Env) => unknown;
  /** A value the gateway cannot use, or why every value is usable. */
  wrong: string | { anyValue: string };
}

const started = (env: Env) => gatewayEnvFrom(env, VENDORS);
const field =
  <K extends keyof GatewayEnv>(k: K) =>
  (env: Env) =>
    started(env)[k];
const OIDC = { GATEWAY_OIDC_ISSUER: 'https://login.example.edu', GATEWAY_OIDC_CLIENT_ID: 'gw', GATEWAY_OIDC_CLIENT_SECRET: 's' };
const S3 = { GATEWAY_VIDEO_STORE: 's3://videos', AWS_REGION: 'ap-northeast-2' };
const SEVERAL_WORKERS_NEED: Env = {
  DATABASE_URL: 'postgres://127.0.0.1/gw',
  ...Object.fromEntries(VENDORS.map((v) => [`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`, 'http://127.0.0.1:9'])),
};
const OTLP = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
const vendor = (v: string): Record<string, Case> => ({
  [`GATEWAY_VENDOR_${v}_URLS`]: { valid: 'http://127.0.0.1:9', read: field('vendors'), wrong: 'ftp://vendor' },
  [`GATEWAY_VENDOR_${v}_KEY`]: {
    with: { [`GATEWAY_VENDOR_${v}_URLS`]: 'http://127.0.0.1:9' },
    valid: 'vendor-secret',
    read: field('vendors'),
    wrong: { anyValue: 'a credential is the vendor’s to judge' },
  },
});

const CASES: Record<string, Case> = {
  HOST: { valid: '0.0.0.0', read: field('host'), wrong: { anyValue: 'an address the listen call refuses names itself' } },
  PORT: { valid: '9090', read: field('port'), wrong: '70000' },
  DATABASE_URL: { valid: 'postgres://127.0.0.1/gw', read: field('databaseUrl'), wrong: 'mysql://db/gw' },
  GATEWAY_DATA_DIR: { valid: '/tmp/gw-data', read: field('dataDir'), wrong: { anyValue: 'any folder; opening it says what fails' } },
  GATEWAY_CONFIG_DIR: { valid: '/etc/gw', read: field('configDir'), wrong: { anyValue: 'the YAML check names what is missing' } },
  GATEWAY_CATALOG_DIR: { valid: '/etc/gw-cat', read: field('catalogDir'), wrong: { anyValue: 'the YAML check names what is missing' } },
  ...Object.assign({}, ...VENDORS.map((v) => vendor(v.toUpperCase()))),
  GATEWAY_SIMULATE: { with: { GATEWAY_VENDOR_A_URLS: 'http://127.0.0.1:9' }, valid: '1', read: field('vendors'), wrong: 'yes' },
  GATEWAY_ADMIN_TOKEN: { valid: 'token', read: field('adminToken'), wrong: { anyValue: 'a token is any text' } },
  GATEWAY_METRICS_TOKEN: { valid: 'token', read: field('metricsAccess'), wrong: { anyValue: 'a token is any text' } },
  GATEWAY_METRICS_OPEN: { valid: 'loopback', read: field('metricsAccess'), wrong: 'all' },
  GATEWAY_PUBLIC_URL: { valid: 'https://gw.example.edu', read: field('publicUrl'), wrong: 'gw.example.edu' },
  GATEWAY_OIDC_ISSUER: { with: OIDC, valid: 'https://idp.example.edu', read: field('oidc'), wrong: 'ftp://idp' },
  GATEWAY_OIDC_CLIENT_ID: { with: OIDC, valid: 'other', read: field('oidc'), wrong: { anyValue: 'the provider judges it' } },
  GATEWAY_OIDC_CLIENT_SECRET: { with: OIDC, valid: 'other', read: field('oidc'), wrong: { anyValue: 'the provider judges it' } },
  GATEWAY_OIDC_MATCH: { with: OIDC, valid: 'email', read: field('oidc'), wrong: 'name' },
  GATEWAY_OIDC_NAME: { with: OIDC, valid: 'School', read: field('oidc'), wrong: { anyValue: 'a button label' } },
  GATEWAY_OIDC_SIGN_OUT: { with: OIDC, valid: 'provider', read: field('oidc'), wrong: 'everywhere' },
  GATEWAY_VIDEO_POLL_MS: { valid: '1000', read: field('videoPollMs'), wrong: '-1' },
  GATEWAY_VIDEO_STORE: { with: { AWS_REGION: 'ap-northeast-2' }, valid: 's3://videos', read: field('videoStore'), wrong: 'disk' },
  AWS_REGION: { with: S3, valid: 'us-east-1', read: field('videoStore'), wrong: { anyValue: 'the bucket’s server judges it' } },
  AWS_ENDPOINT_URL_S3: { with: S3, valid: 'http://127.0.0.1:5000', read: field('videoStore'), wrong: 'ftp://s3' },
  AWS_ACCESS_KEY_ID: {
    with: { ...S3, AWS_ACCESS_KEY_ID: 'id0', AWS_SECRET_ACCESS_KEY: 's' },
    valid: 'id1',
    read: field('videoStore'),
    wrong: { anyValue: 'the bucket judges it; one of the pair alone stops the start (test/videos)' },
  },
  AWS_SECRET_ACCESS_KEY: {
    with: { ...S3, AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 's0' },
    valid: 's1',
    read: field('videoStore'),
    wrong: { anyValue: 'the bucket judges it; one of the pair alone stops the start (test/videos)' },
  },
  GATEWAY_WEBHOOKS_ALLOW_PRIVATE: { valid: '1', read: field('webhooksAllowPrivate'), wrong: 'maybe' },
  GATEWAY_WORKERS: { with: SEVERAL_WORKERS_NEED, valid: '3', read: (env) => workersFromEnv(env, () => VENDORS), wrong: 'many' },
  LOG_LEVEL: { valid: 'warn', read: field('logLevel'), wrong: 'verbose' },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    valid: 'http://127.0.0.1:4318',
    read: field('telemetry'),
    wrong: { anyValue: 'the exporter reports an endpoint it cannot reach' },
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { valid: 'http://127.0.0.1:4318/t', read: field('telemetry'), wrong: { anyValue: 'as above' } },
  OTEL_EXPORTER_OTLP_PROTOCOL: { with: OTLP, valid: 'http/json', read: field('telemetry'), wrong: 'grpc' },
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: { with: OTLP, valid: 'http/json', read: field('telemetry'), wrong: 'grpc' },
  OTEL_SERVICE_NAME: { with: OTLP, valid: 'gw-seoul', read: field('telemetry'), wrong: { anyValue: 'a name' } },
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: {
    with: OTLP,
    valid: 'true',
    read: field('telemetry'),
    wrong: { anyValue: 'only true opts in' },
  },
};

/** The variables a document names: backticked upper-case names, `_X_URLS` spelled out for each vendor. */
function documented(text: string): string[] {
  const names = new Set<string>();
  for (const [, name] of text.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) {
    if (name === 'SIGHUP' || name === 'SIGTERM' || name === 'NODE_EXTRA_CA_CERTS') continue;
    // A vendor's pair is read for each key of config/vendors.yaml: the docs' examples of others (`_X_`, `_F_`) are not.
    const vendor = /^GATEWAY_VENDOR_([A-Z0-9]+)_/.exec(name!)?.[1];
    if (vendor && !VENDORS.includes(vendor.toLowerCase())) continue;
    names.add(name!);
  }
  return [...names];
}

const section = (file: string, heading: string) => {
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  return text.slice(start, text.indexOf('\n## ', start + 1));
};

describe('every documented start variable', () => {
  const names = [
    ...documented(section('docs/operating.md', '## Configuration')),
    ...documented(section('README.md', '## Configuration')),
    ...Object.keys(CASES).filter((n) => n.startsWith('GATEWAY_VENDOR_')),
    ...['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_SERVICE_NAME'],
    'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT',
  ];

  it('has a case here', () => {
    expect(names.filter((n) => !CASES[n])).toEqual([]);
    expect(names.length).toBeGreaterThan(30);
  });

  it.each(Object.entries(CASES))('%s is read at start', (name, c) => {
    const base = c.with ?? {};
    expect(isDeepStrictEqual(c.read({ ...base, [name]: c.valid }), c.read(base)), `${name}=${c.valid} changed nothing`).toBe(false);
  });

  // `HOST=` in a shell or a unit file: the default, not an address of nothing or a vendor left unrouted.
  it.each(Object.entries(CASES))('%s set to nothing reads as unset', (name, c) => {
    const { [name]: _, ...unset } = c.with ?? {};
    const outcome = (env: Env) => {
      try {
        return c.read(env);
      } catch (e) {
        return e instanceof SettingError ? `refused: ${e.message}` : e;
      }
    };
    expect(outcome({ ...unset, [name]: '' })).toEqual(outcome(unset));
  });

  it.each(Object.entries(CASES).filter(([, c]) => typeof c.wrong === 'string'))(
    '%s: an unusable value stops the start naming it',
    (name, c) => {
      const env = { ...c.with, [name]: c.wrong as string };
      if (name === 'GATEWAY_WORKERS') {
        expect(workersFromEnv(env, () => VENDORS)).toMatchObject({ problem: expect.stringContaining(name) });
        return;
      }
      expect(() => gatewayEnvFrom(env, VENDORS)).toThrow(SettingError);
      expect(() => gatewayEnvFrom(env, VENDORS)).toThrow(name);
    },
  );
});
