// Where each vendor is: the ordered routes from GATEWAY_VENDOR_<X>_URLS / _KEY (README "Configuration"),
// or the bundled simulator for vendors without URLs when simulation is on.
import { isHttpAddress, SettingError } from '../core/setting-error.ts';
import { VENDORS, type VendorId } from '../core/types.ts';

export interface Route {
  vendor: VendorId;
  /** 0 for the primary route, then each fallback in order. */
  index: number;
  baseUrl: string;
  key: string;
  simulated: boolean;
}

export type VendorRoutes = Record<VendorId, Route[]>;

type Env = Record<string, string | undefined>;

const urlsVar = (v: VendorId) => `GATEWAY_VENDOR_${v.toUpperCase()}_URLS`;
const keyVar = (v: VendorId) => `GATEWAY_VENDOR_${v.toUpperCase()}_KEY`;

/** Which vendors the simulator must serve: GATEWAY_SIMULATE, defaulting to 1 when no _URLS is set at all. */
export function planRoutes(env: Env): { configured: Partial<Record<VendorId, string[]>>; simulated: VendorId[] } {
  const configured: Partial<Record<VendorId, string[]>> = {};
  for (const v of VENDORS) {
    const urls = (env[urlsVar(v)] ?? '')
      .split(',')
      .map((u) => u.trim().replace(/\/+$/, ''))
      .filter(Boolean);
    if (urls.length) configured[v] = urls;
  }
  const anyConfigured = Object.keys(configured).length > 0;
  const simulate = env.GATEWAY_SIMULATE !== undefined ? env.GATEWAY_SIMULATE === '1' : !anyConfigured;
  return { configured, simulated: simulate ? VENDORS.filter((v) => !configured[v]) : [] };
}

/** The vendors' settings as the start read them: routes, credentials, and which vendors are simulated. */
export interface VendorSettings {
  /** GATEWAY_VENDOR_<X>_URLS, in order, for the vendors that have any. */
  urls: Partial<Record<VendorId, string[]>>;
  /** GATEWAY_VENDOR_<X>_KEY, '' when unset. */
  keys: Record<VendorId, string>;
  /** The vendors the bundled simulator serves (GATEWAY_SIMULATE). */
  simulated: VendorId[];
}

/** Read once at start; a route that is no http(s) address, or a GATEWAY_SIMULATE other than 0 or 1, stops it. */
export function vendorSettingsFrom(env: Env): VendorSettings {
  const simulate = env.GATEWAY_SIMULATE;
  if (simulate !== undefined && simulate !== '' && simulate !== '0' && simulate !== '1') {
    throw new SettingError(`GATEWAY_SIMULATE must be 1 or 0, not '${simulate}'`);
  }
  const { configured, simulated } = planRoutes(env);
  for (const [v, urls] of Object.entries(configured) as [VendorId, string[]][]) {
    for (const url of urls) {
      if (!isHttpAddress(url)) throw new SettingError(`${urlsVar(v)}: '${url}' is not an http(s) address`);
    }
  }
  const keys = Object.fromEntries(VENDORS.map((v) => [v, env[keyVar(v)] ?? ''])) as Record<VendorId, string>;
  return { urls: configured, keys, simulated };
}

/**
 * Vendors given routes (`_URLS`) but no credential (`_KEY`): each call would reach the vendor unauthenticated
 * and be refused there, so the operator is told at start and by /readyz rather than by the clients.
 */
export function missingCredentials(settings: VendorSettings): string[] {
  return VENDORS.filter((v) => settings.urls[v] && !settings.keys[v].trim()).map(
    (v) => `vendor ${v.toUpperCase()} has routes (${urlsVar(v)}) but no credential (${keyVar(v)} is not set)`,
  );
}

/** Routes for every vendor; `simulatorUrl` gives the simulator's base URL for a simulated vendor's route. */
export function routesFor(settings: VendorSettings, simulatorUrl?: (vendor: VendorId) => string): VendorRoutes {
  const routes = {} as VendorRoutes;
  for (const v of VENDORS) {
    const key = settings.keys[v];
    const urls = settings.urls[v];
    if (urls) {
      routes[v] = urls.map((baseUrl, index) => ({ vendor: v, index, baseUrl, key, simulated: false }));
    } else if (settings.simulated.includes(v) && simulatorUrl) {
      routes[v] = [{ vendor: v, index: 0, baseUrl: simulatorUrl(v), key: key || `sim-key-${v}`, simulated: true }];
    } else {
      routes[v] = [];
    }
  }
  return routes;
}
