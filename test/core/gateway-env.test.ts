// The start settings read once (engine/gateway-env.ts): every default as README "Configuration" names it, and
// a value the gateway cannot use stops the start with a sentence naming its variable.
import { describe, expect, it } from 'vitest';
import { routesFor, vendorBannerLines, vendorWarnings } from '../../engine/calls/vendor-routes.ts';
import { SettingError } from '../../engine/core/setting-error.ts';
import { gatewayEnvFrom } from '../../engine/gateway-env.ts';
import { VENDORS } from '../helpers/vendors.ts';

describe('gatewayEnvFrom', () => {
  it('gives each variable its documented default', () => {
    const env = gatewayEnvFrom({}, VENDORS);
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

  it('reads a variable set to nothing as unset: HOST, PORT and GATEWAY_SIMULATE keep their defaults', () => {
    const env = gatewayEnvFrom({ HOST: '', PORT: '', GATEWAY_SIMULATE: '' }, VENDORS);
    expect(env).toMatchObject({ host: '127.0.0.1', port: 8080 });
    expect(env.vendors.simulated).toEqual([...VENDORS]);
  });

  it('reads what is set, empty meaning unset where it always did', () => {
    const env = gatewayEnvFrom(
      {
        PORT: '0',
        HOST: '0.0.0.0',
        DATABASE_URL: '',
        GATEWAY_ADMIN_TOKEN: '',
        GATEWAY_PUBLIC_URL: 'https://gw.example.com/',
        GATEWAY_VENDOR_B_URLS: 'http://127.0.0.1:9/, http://127.0.0.1:10',
        GATEWAY_VENDOR_B_KEY: 'k',
        GATEWAY_SIMULATE: '0',
        LOG_LEVEL: 'warn',
      },
      VENDORS,
    );
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
      expect(gatewayEnvFrom({ DATABASE_URL: url }, VENDORS).databaseUrl).toBe(url);
    }
    expect(() => gatewayEnvFrom({ DATABASE_URL: 'mysql://u:secret@db/gw' }, VENDORS)).toThrow(/^(?!.*secret)/);
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
    expect(() => gatewayEnvFrom(env, VENDORS)).toThrow(SettingError);
    expect(() => gatewayEnvFrom(env, VENDORS)).toThrow(name);
  });
  it("reads the routes of config/vendors.yaml's vendors, whatever their ids", () => {
    const env = gatewayEnvFrom({ GATEWAY_VENDOR_F_URLS: 'http://127.0.0.1:9', GATEWAY_VENDOR_F_KEY: 'kf', GATEWAY_SIMULATE: '1' }, [
      ...VENDORS,
      'f',
    ]);
    expect(env.vendors.urls.f).toEqual(['http://127.0.0.1:9']);
    expect(env.vendors.simulated).toEqual(VENDORS);
    const routes = routesFor(env.vendors, (v) => `http://sim/r/${v}`);
    expect(routes.f).toEqual([{ vendor: 'f', index: 0, baseUrl: 'http://127.0.0.1:9', key: 'kf', simulated: false }]);
    expect(routes.a?.[0]).toMatchObject({ baseUrl: 'http://sim/r/a', simulated: true });
    expect(() => gatewayEnvFrom({ GATEWAY_VENDOR_F_URLS: 'ftp://vendor' }, ['f'])).toThrow('GATEWAY_VENDOR_F_URLS');
  });

  it('leaves the routes of a vendor config/vendors.yaml lacks unused, and says so', () => {
    const env = gatewayEnvFrom({ GATEWAY_VENDOR_Z_URLS: 'ftp://not-even-read', GATEWAY_VENDOR_A_URLS: 'http://127.0.0.1:9' }, VENDORS);
    expect(env.vendors.urls).toEqual({ a: ['http://127.0.0.1:9'] });
    expect(env.vendors.ignored).toEqual(['GATEWAY_VENDOR_Z_URLS']);
    expect(routesFor(env.vendors).z).toBeUndefined();
    expect(vendorWarnings(env.vendors).slice(0, 2)).toEqual([
      'vendor A has routes (GATEWAY_VENDOR_A_URLS) but no credential (GATEWAY_VENDOR_A_KEY is not set)',
      "GATEWAY_VENDOR_Z_URLS is set but config/vendors.yaml has no vendor 'z': its routes are not used",
    ]);
  });

  it('names the vendors left with neither routes nor the simulator, and the variables that would give them routes', () => {
    const only = gatewayEnvFrom({ GATEWAY_VENDOR_B_URLS: 'http://127.0.0.1:9', GATEWAY_VENDOR_B_KEY: 'kb' }, VENDORS);
    expect(vendorWarnings(only.vendors)).toEqual([
      'vendors A, C, D, E have no routes and the bundled simulator is off (GATEWAY_SIMULATE; 0 by default once any ' +
        'GATEWAY_VENDOR_<X>_URLS is set): calls to their models answer 502 until GATEWAY_VENDOR_A_URLS, ' +
        'GATEWAY_VENDOR_C_URLS, GATEWAY_VENDOR_D_URLS, GATEWAY_VENDOR_E_URLS are set, or GATEWAY_SIMULATE=1',
    ]);
    expect(vendorBannerLines(only.vendors, undefined)).toEqual([
      'vendors with routes of their own (GATEWAY_VENDOR_<X>_URLS): B (1)',
      'vendors A, C, D, E have no routes and no simulator: calls to them answer 502 (warning below)',
    ]);
    // The simulator turned on serves the same vendors, and the banner says so instead.
    const simulated = gatewayEnvFrom(
      { GATEWAY_VENDOR_B_URLS: 'http://127.0.0.1:9,http://127.0.0.1:10', GATEWAY_VENDOR_B_KEY: 'kb', GATEWAY_SIMULATE: '1' },
      VENDORS,
    );
    expect(vendorWarnings(simulated.vendors)).toEqual([]);
    expect(vendorBannerLines(simulated.vendors, 'http://127.0.0.1:7')).toEqual([
      'vendors with routes of their own (GATEWAY_VENDOR_<X>_URLS): B (2)',
      'vendors A, C, D, E have no routes and are served by the bundled simulator (http://127.0.0.1:7); set GATEWAY_VENDOR_<X>_URLS for real vendors',
    ]);
  });
});
