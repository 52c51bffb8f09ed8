// Where each vendor is: the ordered routes from GATEWAY_VENDOR_<X>_URLS / _KEY (README "Configuration"),
// or the bundled simulator for vendors without URLs when simulation is on.
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

/**
 * Vendors given routes (`_URLS`) but no credential (`_KEY`): each call would reach the vendor unauthenticated
 * and be refused there, so the operator is told at start and by /readyz rather than by the clients.
 */
export function missingCredentials(env: Env): string[] {
  const { configured } = planRoutes(env);
  return VENDORS.filter((v) => configured[v] && !env[keyVar(v)]?.trim()).map(
    (v) => `vendor ${v.toUpperCase()} has routes (${urlsVar(v)}) but no credential (${keyVar(v)} is not set)`,
  );
}

/** Routes for every vendor; `simulatorUrl` gives the simulator's base URL for a simulated vendor's route. */
export function routesFromEnv(env: Env, simulatorUrl?: (vendor: VendorId) => string): VendorRoutes {
  const { configured, simulated } = planRoutes(env);
  const routes = {} as VendorRoutes;
  for (const v of VENDORS) {
    const key = env[keyVar(v)] ?? '';
    if (configured[v]) {
      routes[v] = configured[v]!.map((baseUrl, index) => ({ vendor: v, index, baseUrl, key, simulated: false }));
    } else if (simulated.includes(v) && simulatorUrl) {
      routes[v] = [{ vendor: v, index: 0, baseUrl: simulatorUrl(v), key: key || `sim-key-${v}`, simulated: true }];
    } else {
      routes[v] = [];
    }
  }
  return routes;
}
