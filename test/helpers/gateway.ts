// An in-process gateway on loopback with its own simulator, so a test can inject faults per route
// and read what each vendor received. Vendors get two routes each: `<v>0` (primary) and `<v>1`.

import { contextWindows, maxOutputs, vendorRefusals } from '../../engine/calls/vendor-refusals.ts';
import { vendorIdsOf } from '../../engine/catalog/config.ts';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { type Clock, fixedClock } from '../../engine/core/clock.ts';
import type { VendorId } from '../../engine/core/types.ts';
import { createGateway, type GatewayOptions, type RunningGateway } from '../../engine/gateway.ts';
import { type Simulator, type SimulatorOptions, startSimulator } from '../../simulator/index.ts';
import { walletView } from './ledger.ts';

export interface TestGateway {
  url: string;
  gw: RunningGateway;
  sim: Simulator;
  walletId: string;
  apiKey: string;
  /** What the test wallet can spend, in nano-USD: its available balance, with what budget leases hold unspent counted back. */
  balance(): Promise<bigint>;
  /** What the test wallet's calls in flight hold, in nano-USD: their own reservations, and what they hold of this gateway's leases. */
  held(): Promise<bigint>;
  /** What vendor `v` received on its routes, in order (route name `v0`, `v1`). */
  received(v: VendorId): Simulator['received'];
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  credits?: number;
  env?: Record<string, string>;
  clock?: Clock;
  dirs?: { config: string; catalog: string };
  routesPerVendor?: number;
  simulator?: SimulatorOptions;
  /** pino options for the gateway's log (a `stream` captures it); none by default. */
  logger?: GatewayOptions['logger'];
}

export const TEST_NOW = '2026-11-21T03:00:00Z';

/** /metrics is closed by default: a test that scrapes it over loopback opens it as an operator would. */
export const METRICS_OPEN_TO_LOOPBACK = { GATEWAY_METRICS_OPEN: 'loopback' } as const;

export async function startTestGateway(opts: TestGatewayOptions = {}): Promise<TestGateway> {
  const dirs = opts.dirs ?? { config: 'config', catalog: 'catalog' };
  const refusalRuntime = new Runtime(dirs);
  const sim = await startSimulator({
    refuse: vendorRefusals(refusalRuntime),
    contextWindow: contextWindows(refusalRuntime),
    maxOutput: maxOutputs(refusalRuntime),
    ...opts.simulator,
  });
  const env: Record<string, string> = {
    GATEWAY_SIMULATE: '0',
    GATEWAY_DATA_DIR: 'memory://',
    GATEWAY_CONFIG_DIR: dirs.config,
    GATEWAY_CATALOG_DIR: dirs.catalog,
    GATEWAY_ADMIN_TOKEN: 'test-admin-token',
  };
  // Every vendor of the config folder's vendors.yaml, so a test's own vendors get routes too.
  for (const v of vendorIdsOf(refusalRuntime.snapshot().config)) {
    const n = opts.routesPerVendor ?? 2;
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = Array.from({ length: n }, (_, i) => sim.routeUrl(`${v}${i}`)).join(',');
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = `vendor-${v}-secret`;
  }
  Object.assign(env, opts.env); // a test may point a vendor elsewhere
  const gw = await createGateway({ env, clock: opts.clock ?? fixedClock(TEST_NOW), logger: opts.logger ?? false, sweeper: false });
  const url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const wallet = await gw.ledger.createWallet({ credits: opts.credits ?? 100_000_000 });
  const { key } = await gw.keys.createApiKey(wallet.id, { name: 'test' });
  return {
    url,
    gw,
    sim,
    walletId: wallet.id,
    apiKey: key,
    balance: async () => (await walletView(gw, wallet.id)).spendableNano,
    held: async () => (await walletView(gw, wallet.id)).heldNano,
    received: (v) => sim.received.filter((r) => r.route.startsWith(v)),
    async close() {
      await gw.close();
      await sim.close();
    },
  };
}
