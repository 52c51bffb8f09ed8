// Where each vendor is: the ordered routes from GATEWAY_VENDOR_<X>_URLS / _KEY (README "Configuration"),
// or the bundled simulator for vendors without URLs when simulation is on.
import { isHttpAddress, SettingError } from '../core/setting-error.ts';
import type { VendorId } from '../core/types.ts';

export interface Route {
  vendor: VendorId;
  /** 0 for the primary route, then each fallback in order. */
  index: number;
  baseUrl: string;
  key: string;
  simulated: boolean;
}

/** Routes by vendor; a vendor without an entry (one a reload added to config/vendors.yaml) has none. */
export type VendorRoutes = Partial<Record<VendorId, Route[]>>;

type Env = Record<string, string | undefined>;

/** The variable that gives vendor `v` its routes: named by the start's warnings and by the 502 of a vendor without any. */
export const urlsVar = (v: VendorId) => `GATEWAY_VENDOR_${v.toUpperCase()}_URLS`;
const keyVar = (v: VendorId) => `GATEWAY_VENDOR_${v.toUpperCase()}_KEY`;
const URLS_VAR = /^GATEWAY_VENDOR_(.+)_URLS$/;

/**
 * Which vendors the simulator must serve: GATEWAY_SIMULATE, defaulting to 1 when no vendor's _URLS is set at
 * all. `vendors` are config/vendors.yaml's ids: the variables read are theirs.
 */
export function planRoutes(
  env: Env,
  vendors: readonly VendorId[],
): { configured: Partial<Record<VendorId, string[]>>; simulated: VendorId[] } {
  const configured: Partial<Record<VendorId, string[]>> = {};
  for (const v of vendors) {
    const urls = (env[urlsVar(v)] ?? '')
      .split(',')
      .map((u) => u.trim().replace(/\/+$/, ''))
      .filter(Boolean);
    if (urls.length) configured[v] = urls;
  }
  const anyConfigured = Object.keys(configured).length > 0;
  const simulate = env.GATEWAY_SIMULATE ? env.GATEWAY_SIMULATE === '1' : !anyConfigured; // set to nothing: unset
  return { configured, simulated: simulate ? vendors.filter((v) => !configured[v]) : [] };
}

/** The vendors' settings as the start read them: routes, credentials, and which vendors are simulated. */
export interface VendorSettings {
  /** The vendors, config/vendors.yaml's keys as the start read them. */
  vendors: readonly VendorId[];
  /** GATEWAY_VENDOR_<X>_URLS, in order, for the vendors that have any. */
  urls: Partial<Record<VendorId, string[]>>;
  /** GATEWAY_VENDOR_<X>_KEY, '' when unset. */
  keys: Record<VendorId, string>;
  /** The vendors the bundled simulator serves (GATEWAY_SIMULATE). */
  simulated: VendorId[];
  /** GATEWAY_VENDOR_<X>_URLS variables set for no vendor of config/vendors.yaml: not used, and said at start. */
  ignored: string[];
}

/**
 * Read once at start, for `vendors` (config/vendors.yaml's ids); a route that is no http(s) address, or a
 * GATEWAY_SIMULATE other than 0 or 1, stops it.
 */
export function vendorSettingsFrom(env: Env, vendors: readonly VendorId[]): VendorSettings {
  const simulate = env.GATEWAY_SIMULATE;
  if (simulate !== undefined && simulate !== '' && simulate !== '0' && simulate !== '1') {
    throw new SettingError(`GATEWAY_SIMULATE must be 1 or 0, not '${simulate}'`);
  }
  const { configured, simulated } = planRoutes(env, vendors);
  for (const [v, urls] of Object.entries(configured) as [VendorId, string[]][]) {
    for (const url of urls) {
      if (!isHttpAddress(url)) throw new SettingError(`${urlsVar(v)}: '${url}' is not an http(s) address`);
    }
  }
  const keys = Object.fromEntries(vendors.map((v) => [v, env[keyVar(v)] ?? ''])) as Record<VendorId, string>;
  const known = new Set(vendors.map(urlsVar));
  const ignored = Object.keys(env)
    .filter((name) => URLS_VAR.test(name) && !known.has(name) && env[name]?.trim())
    .sort();
  return { vendors: [...vendors], urls: configured, keys, simulated, ignored };
}

/**
 * What the operator is told at start and by /readyz rather than by the clients: vendors given routes (`_URLS`)
 * but no credential (`_KEY`), whose calls would reach the vendor unauthenticated and be refused there; a `_URLS`
 * variable of a vendor config/vendors.yaml does not have (a misspelt or removed vendor); and vendors with neither
 * routes nor the simulator, whose calls answer 502 (setting one vendor's URLs turns the simulator off by default).
 */
export function vendorWarnings(settings: VendorSettings): string[] {
  const unkeyed = settings.vendors
    .filter((v) => settings.urls[v] && !(settings.keys[v] ?? '').trim())
    .map((v) => `vendor ${v.toUpperCase()} has routes (${urlsVar(v)}) but no credential (${keyVar(v)} is not set)`);
  const unknown = settings.ignored.map((name) => {
    const id = URLS_VAR.exec(name)![1]!.toLowerCase();
    return `${name} is set but config/vendors.yaml has no vendor '${id}': its routes are not used`;
  });
  const unrouted = unroutedVendors(settings);
  const many = unrouted.length > 1;
  const unserved = unrouted.length
    ? [
        `${vendorList(unrouted)} no routes and the bundled simulator is off (GATEWAY_SIMULATE; 0 by default once any ` +
          `GATEWAY_VENDOR_<X>_URLS is set): calls to ${many ? 'their' : 'its'} models answer 502 until ` +
          `${unrouted.map(urlsVar).join(', ')} ${many ? 'are' : 'is'} set, or GATEWAY_SIMULATE=1`,
      ]
    : [];
  return [...unkeyed, ...unknown, ...unserved];
}

/** Vendors with no `_URLS` that the simulator does not serve either. */
function unroutedVendors(settings: VendorSettings): VendorId[] {
  return settings.vendors.filter((v) => !settings.urls[v] && !settings.simulated.includes(v));
}

/** "vendor A has" or "vendors A, C have": the start of a sentence about some vendors. */
const vendorList = (vs: readonly VendorId[]) =>
  `vendor${vs.length > 1 ? 's' : ''} ${vs.map((v) => v.toUpperCase()).join(', ')} ${vs.length > 1 ? 'have' : 'has'}`;

/**
 * The start banner's lines about the vendors: which have routes of their own, which the bundled simulator serves
 * (at `simulatorUrl`), and which have neither; so an operator who set some vendors' URLs sees what became of the rest.
 */
export function vendorBannerLines(settings: VendorSettings, simulatorUrl: string | undefined): string[] {
  const lines: string[] = [];
  const routed = settings.vendors.filter((v) => settings.urls[v]);
  if (routed.length) {
    const counts = routed.map((v) => `${v.toUpperCase()} (${settings.urls[v]!.length})`).join(', ');
    lines.push(`vendors with routes of their own (GATEWAY_VENDOR_<X>_URLS): ${counts}`);
  }
  if (settings.simulated.length && simulatorUrl) {
    lines.push(
      `${vendorList(settings.simulated)} no routes and ${settings.simulated.length > 1 ? 'are' : 'is'} served by the bundled simulator (${simulatorUrl}); set GATEWAY_VENDOR_<X>_URLS for real vendors`,
    );
  }
  const unrouted = unroutedVendors(settings);
  if (unrouted.length) lines.push(`${vendorList(unrouted)} no routes and no simulator: calls to them answer 502 (warning below)`);
  return lines;
}

/** Per vendor, how many routes it has and whether they are the simulator's: /readyz shows it. */
export function routeSummary(routes: VendorRoutes): Record<VendorId, { routes: number; simulated: boolean }> {
  return Object.fromEntries(
    Object.entries(routes).map(([v, rs]) => [v, { routes: rs?.length ?? 0, simulated: Boolean(rs?.some((r) => r.simulated)) }]),
  );
}

/** Routes for every vendor; `simulatorUrl` gives the simulator's base URL for a simulated vendor's route. */
export function routesFor(settings: VendorSettings, simulatorUrl?: (vendor: VendorId) => string): VendorRoutes {
  const routes: VendorRoutes = {};
  for (const v of settings.vendors) {
    const key = settings.keys[v] ?? '';
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
