// The start settings read once (engine/gateway-env.ts): every default as README "Configuration" names it, and
// a value the gateway cannot use stops the start with a sentence naming its variable.
import { describe, expect, it } from 'vitest';
import { gatewayEnvFrom } from '../../engine/gateway-env.ts';
import { SettingError } from '../../engine/core/setting-error.ts';

describe('gatewayEnvFrom', () => {
  it('gives each variable its documented default', () => {
    const env = gatewayEnvFrom({});
    expect(env).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: undefined,
      dataDir: './data',
      configDir: './config',
      catalogDir: './catalog',
      adminToken: undefined,
      publicUrl: undefined,
      logLevel: 'info',
      videoStore: { kind: 'file' },
      metricsAccess: { token: undefined, openToLoopback: false },
      oidc: null,
      webhooksAllowPrivate: false,
      telemetry: null,
      workerIndex: null,
    });
    // No vendor URL at all: the bundled simulator serves every vendor.
    expect(env.vendors.simulated.length).toBeGreaterThan(0);
  });

  it('reads what is set, empty meaning unset where it always did', () => {
    const env = gatewayEnvFrom({
      PORT: '0',
      HOST: '0.0.0.0',
      DATABASE_URL: '',
      GATEWAY_ADMIN_TOKEN: '',
      GATEWAY_PUBLIC_URL: 'https://gw.example.com/',
      GATEWAY_VENDOR_B_URLS: 'http://127.0.0.1:9/, http://127.0.0.1:10',
      GATEWAY_VENDOR_B_KEY: 'k',
      GATEWAY_SIMULATE: '0',
      LOG_LEVEL: 'warn',
    });
    expect(env).toMatchObject({ port: 0, host: '0.0.0.0', databaseUrl: undefined, adminToken: undefined, logLevel: 'warn' });
    expect(env.publicUrl).toBe('https://gw.example.com/');
    expect(env.vendors.urls.b).toEqual(['http://127.0.0.1:9', 'http://127.0.0.1:10']);
    expect(env.vendors.keys.b).toBe('k');
    expect(env.vendors.simulated).toEqual([]);
  });

  it('takes the forms pg connects to, and never shows a password it refuses', () => {
    for (const url of [
      'postgres://u:p@127.0.0.1:5432/gw',
      'postgresql://127.0.0.1/gw',
      'socket:/var/run/postgresql?db=gw',
      '/var/run/postgresql',
    ]) {
      expect(gatewayEnvFrom({ DATABASE_URL: url }).databaseUrl).toBe(url);
    }
    expect(() => gatewayEnvFrom({ DATABASE_URL: 'mysql://u:secret@db/gw' })).toThrow(/^(?!.*secret)/);
  });

  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://u:secret@db/gw' }, 'DATABASE_URL'],
    [{ PORT: '70000' }, 'PORT'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL'],
    [{ GATEWAY_PUBLIC_URL: 'gw.example.com' }, 'GATEWAY_PUBLIC_URL'],
    [{ GATEWAY_SIMULATE: 'yes' }, 'GATEWAY_SIMULATE'],
    [{ GATEWAY_VENDOR_A_URLS: 'ftp://vendor' }, 'GATEWAY_VENDOR_A_URLS'],
    [{ GATEWAY_VIDEO_POLL_MS: '-1' }, 'GATEWAY_VIDEO_POLL_MS'],
    [{ GATEWAY_VIDEO_STORE: 'disk' }, 'GATEWAY_VIDEO_STORE'],
    [{ GATEWAY_METRICS_OPEN: 'all' }, 'GATEWAY_METRICS_OPEN'],
    [{ GATEWAY_WEBHOOKS_ALLOW_PRIVATE: 'maybe' }, 'GATEWAY_WEBHOOKS_ALLOW_PRIVATE'],
    [{ GATEWAY_OIDC_ISSUER: 'https://login.example.edu' }, 'GATEWAY_OIDC_CLIENT_ID'],
  ])('stops on %o, naming %s', (env, name) => {
    expect(() => gatewayEnvFrom(env)).toThrow(SettingError);
    expect(() => gatewayEnvFrom(env)).toThrow(name);
  });
});
