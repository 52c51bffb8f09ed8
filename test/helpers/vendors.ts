// The repository's vendors: config/vendors.yaml's keys, the one list of them (the engine keeps no other).
import { vendorIdsIn } from '../../engine/catalog/config.ts';

export const VENDORS: readonly string[] = vendorIdsIn('config');

/** Every vendor's route at the bundled simulator, as a child gateway's environment (one route, one credential each). */
export function vendorsAtSimulator(sim: { routeUrl(route: string): string }, credential = 'secret'): Record<string, string> {
  const env: Record<string, string> = {};
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = sim.routeUrl(v);
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = credential;
  }
  return env;
}
