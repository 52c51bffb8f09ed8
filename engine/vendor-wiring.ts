// The vendors' side of one gateway: where each vendor's calls go (GatewayEnv's vendor settings, or the bundled
// simulator for a simulated vendor) and the upstream client's connections to them. Wiring at the top level of
// engine/ because the simulator is a folder beside engine/ that no room may import.
import type { Simulator } from '../simulator/index.ts';
import { UpstreamClient } from './calls/upstream.ts';
import { contextWindows, maxOutputs, vendorRefusals } from './calls/vendor-refusals.ts';
import { routeSummary, routesFor, type VendorRoutes, type VendorSettings, vendorWarnings } from './calls/vendor-routes.ts';
import type { Runtime } from './catalog/runtime.ts';

export interface VendorSide {
  /** The bundled simulator, when some vendor is simulated (GATEWAY_SIMULATE). */
  simulator: Simulator | null;
  routes: VendorRoutes;
  upstream: UpstreamClient;
  /** Vendors given routes but no credential, or neither routes nor the simulator: some calls fail, the start does not (logged, and shown by /readyz). */
  warnings: string[];
  /** Per vendor, its number of routes and whether the simulator serves it, as /readyz shows them. */
  summary: ReturnType<typeof routeSummary>;
  /** Once no call is left: the connections to the vendors, then the simulator. */
  close(): Promise<void>;
}

export async function openVendorSide(vendors: VendorSettings, runtime: Runtime): Promise<VendorSide> {
  const simulator = vendors.simulated.length ? await startBundledSimulator(runtime) : null;
  // The pools are sized once from limits.yaml: these three limits need a restart (docs/architecture.md).
  const limits = runtime.snapshot().config.limits;
  const upstream = new UpstreamClient({
    connectTimeoutMs: limits.connect_timeout_ms,
    connectionsPerOrigin: limits.vendor_connections,
    http2Streams: limits.vendor_http2_streams,
  });
  const routes = routesFor(vendors, simulator ? (v) => simulator.routeUrl(v) : undefined);
  return {
    simulator,
    routes,
    upstream,
    warnings: vendorWarnings(vendors),
    summary: routeSummary(routes),
    async close() {
      await upstream.close();
      await simulator?.close();
    },
  };
}

/** Loaded only when asked for, so a gateway with real vendors never loads the simulator's code. */
async function startBundledSimulator(runtime: Runtime): Promise<Simulator> {
  const { startSimulator } = await import('../simulator/index.ts');
  return startSimulator({ refuse: vendorRefusals(runtime), contextWindow: contextWindows(runtime), maxOutput: maxOutputs(runtime) });
}
