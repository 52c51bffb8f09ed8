// Database and process faults for the chaos suite, each with the gateway it needs:
// - PostgreSQL restarted under load: an in-process gateway on a PostgreSQL of the test's own (restarting the
//   shared one would break every other test), stopped and started again while a run's calls are in flight.
//   Calls answer 503 while it is down, settles that failed are written once it is back, the gateway is not
//   restarted.
// - The gateway SIGKILLed under load: a child gateway process on a scratch schema of the test PostgreSQL,
//   killed while a run's calls are in flight and started again on the same port; its holds and leases expire
//   (short TTLs) and the new process's sweeper releases them. What the dead process had not charged is lost
//   and reported, within a bound; nothing stays held and nothing is charged twice.
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService } from '../../engine/keys/service.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { startSimulator } from '../../simulator/index.ts';
import { openTestPostgres } from '../helpers/databases.ts';
import { freePort } from '../helpers/free-port.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { startPrivatePostgres } from '../helpers/private-postgres.ts';
import { tempCatalogTree } from '../helpers/temp-catalog.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';
import { CHAOS_CALL_TIMEOUT_MS } from './faults.ts';
import type { FaultCase } from './harness.ts';
import { billingFor, LEASE_TTL_MS } from './kill-target.ts';
import type { ChaosStarter } from './suite.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The PostgreSQL restart suite's text time limit: its vendors never stall, and a restart's recovery starves the one
 * process that runs both the gateway and the simulator, so the chaos limit would cut answers the vendor had sent.
 */
const RESTART_CALL_TIMEOUT_MS = 10_000;

/** The text doors' time limit of a chaos suite, so a stalled call costs seconds. */
function chaosLimits(text: string, ttlMs?: number, limitMs = CHAOS_CALL_TIMEOUT_MS): string {
  let out = text
    .replace(/ {2}chat: 300000/, `  chat: ${limitMs}`)
    .replace(/ {2}messages: 300000/, `  messages: ${limitMs}`)
    .replace(/ {2}responses: 300000/, `  responses: ${limitMs}`);
  if (ttlMs)
    out = out
      .replace(/^reservation_ttl_ms: \d+/m, `reservation_ttl_ms: ${ttlMs}`)
      .replace(/^sweep_interval_ms: \d+/m, 'sweep_interval_ms: 200');
  return out;
}

/**
 * Waits for the moment a run's restart hits, by what the vendor has seen of its calls, since a fixed delay depends on
 * the machine's speed: 0, before the holds; 1, once a call is at the vendor; 2, once an answer has left the vendor (its
 * charge is being written). At most 3 s: a run whose calls were all refused restarts anyway.
 */
async function untilPhase(phase: number, sim: { received: unknown[]; outcomes: unknown[] }): Promise<void> {
  const seen = phase === 1 ? () => sim.received.length : () => sim.outcomes.length;
  const before = seen();
  const deadline = Date.now() + 3_000;
  if (phase === 0) {
    await sleep(5);
    return;
  }
  while (seen() === before && Date.now() < deadline) await sleep(1);
}

/** A suite on its own PostgreSQL, with the fault that restarts it during every run. */
export function postgresRestartSuite(): { start: ChaosStarter; faults: FaultCase[] } {
  let restart: ((run: number) => Promise<void>) | null = null;
  const start: ChaosStarter = async () => {
    const pg = await startPrivatePostgres(await freePort());
    const tree = tempCatalogTree();
    tree.edit('config/limits.yaml', (t) => chaosLimits(t, undefined, RESTART_CALL_TIMEOUT_MS));
    const t = await startTestGateway({ dirs: tree, env: { DATABASE_URL: pg.url }, simulator: { streamChunkDelayMs: 3 } });
    restart = async (run) => {
      await untilPhase(run % 3, t.sim);
      await pg.stop();
      await sleep(250);
      await pg.start();
    };
    return {
      database: 'postgres',
      target: {
        url: t.url,
        sim: t.sim,
        db: t.gw.db,
        newWallet: async (credits) => (await t.gw.ledger.createWallet({ credits })).id,
        newApiKey: (walletId, name) => t.gw.keys.createApiKey(walletId, { name }),
      },
      async close() {
        await t.close();
        await pg.destroy();
        tree.remove();
      },
    };
  };
  return {
    start,
    faults: [
      {
        name: 'PostgreSQL restarted under load',
        during: (ctx) => restart!(ctx.run),
        settleMs: 15_000,
        // A restart that met no call at the vendor, or refused none, proved nothing about the charges it cut.
        check: async (_ctx, _calls, report) => {
          const { answered, refused } = report.figures;
          return answered > 0 && refused > 0 ? [] : [`restarts met ${answered} answered and ${refused} refused calls: a phase never ran`];
        },
      },
    ],
  };
}

/** A suite on a child gateway process, with the fault that SIGKILLs it during every run and starts another. */
export function gatewayKillSuite(): { start: ChaosStarter; faults: FaultCase[] } {
  let killAndRestart: ((run: number) => Promise<void>) | null = null;
  const RESERVATION_TTL_MS = 1_500;
  const start: ChaosStarter = async () => {
    const schema = await openTestPostgres();
    const sim = await startSimulator({ streamChunkDelayMs: 3 });
    const ledger = createLedger(schema.db, { clock: systemClock });
    const keys = createKeyService(schema.db, { clock: systemClock });
    const port = await freePort();
    const env: Record<string, string> = { DATABASE_URL: schema.url, GATEWAY_SIMULATE: '0', LOG_LEVEL: 'error', PORT: String(port) };
    for (const v of VENDORS) {
      env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = [0, 1].map((i) => sim.routeUrl(`${v}${i}`)).join(',');
      env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = `vendor-${v}-secret`;
    }
    const launch = () =>
      startChildGateway(env, {
        apiKey: 'unused',
        prepare: (tree) => {
          tree.edit('config/limits.yaml', (t) => chaosLimits(t, RESERVATION_TTL_MS));
          // The shipped leases: a killed process's leases are holds until their TTL, shortened as for kill-charged.
          tree.edit('config/billing.yaml', (t) => billingFor(t, true));
        },
      });
    let child: ChildGateway = await launch();
    killAndRestart = async (run) => {
      await sleep(5 + (run % 6) * 10);
      child.child.kill('SIGKILL');
      await child.exited;
      child.remove();
      child = await launch();
    };
    return {
      database: 'postgres',
      target: {
        url: `http://127.0.0.1:${port}`,
        sim,
        db: schema.db,
        newWallet: async (credits) => (await ledger.createWallet({ credits })).id,
        newApiKey: (walletId, name) => keys.createApiKey(walletId, { name }),
      },
      async close() {
        child.remove();
        await keys.close();
        await sim.close();
        await schema.cleanup();
      },
    };
  };
  return {
    start,
    faults: [
      {
        name: 'gateway SIGKILLed under load',
        during: (ctx) => killAndRestart!(ctx.run),
        settleMs: Math.max(RESERVATION_TTL_MS, LEASE_TTL_MS) + 5_000,
        // Only calls in flight at the kill can lose their charge: at most every call of every run.
        lossBound: (calls) => calls,
      },
    ],
  };
}
