// The gateway's Prometheus metrics, in one registry per gateway so gateways in one process do not mix series.
// Under GATEWAY_WORKERS one worker answers for all: counts add up, and a figure of the whole gateway is taken once
// or from its most alarming worker, so one worker that refused a reload or failed an audit shows.
import { AggregatorRegistry, Counter, Gauge, Histogram, type MetricObjectWithValues, type MetricValue, Registry } from 'prom-client';
import type { ReloadResult, Runtime } from '../catalog/runtime.ts';
import type { Db } from '../db/db.ts';
import type { RequestOutcome } from '../http/access-log.ts';
import { LEDGER_CHECKS, type LedgerAuditRun } from '../money/audit.ts';
import type { ChargeStats } from '../money/charge-writer.ts';
import type { LeaseStats } from '../money/leases.ts';
import { LEASE_CALL_PREFIX } from '../money/types.ts';

type PoolUse = { total: number; idle: number; waiting: number };
/** The embedded database: one in-process connection, never waited for. */
const EMBEDDED_POOL: PoolUse = { total: 1, idle: 0, waiting: 0 };

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

interface MetricsSources {
  db: Db;
  runtime: Runtime;
  /** This process's budget leases (money/leases.ts), when the gateway has them. */
  leases?: { stats(): LeaseStats };
  /** The charge writer (money/charge-writer.ts). */
  charges?: { stats(): ChargeStats };
  /** The periodic ledger audit (money/audit.ts), when it runs. */
  ledgerAudit?: { last(): LedgerAuditRun | null };
}

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter;
  private readonly duration: Histogram;
  private readonly ttfb: Histogram;
  private readonly fallbacks: Counter;
  private readonly refusals: Counter;
  private readonly credentialRefusals: Counter;
  private readonly charged: Counter;
  private readonly aboveHold: Counter;
  private readonly aboveHoldNano: Counter;
  private readonly reloads: Counter;
  private readonly lastReload: Gauge;
  /**
   * The pool's use as the scrape began: read before any gauge's query takes a connection, so a scrape does not
   * count its own query as a client waiting (prom-client collects the gauges together).
   */
  private poolAtScrape: PoolUse = EMBEDDED_POOL;

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'gateway_requests_total',
      help: 'Answered requests by door, model, vendor and status (model and vendor empty when the request named no catalog model).',
      labelNames: ['door', 'model', 'vendor', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 'gateway_request_duration_seconds',
      help: 'Time until the answer ended, model calls, by door.',
      labelNames: ['door'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.ttfb = new Histogram({
      name: 'gateway_time_to_first_byte_seconds',
      help: 'Time until the first byte of the answer, model calls, by door.',
      labelNames: ['door'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.fallbacks = new Counter({
      name: 'gateway_route_failures_total',
      help: 'Vendor routes that failed and were fallen back from, by route name (a0, a1, …).',
      labelNames: ['route'],
      registers,
    });
    this.refusals = new Counter({
      name: 'gateway_reservation_refusals_total',
      help: 'Calls refused before anything was held, by status: 402 too few credits, 403 plan or audience, 429 quota.',
      labelNames: ['status'],
      registers,
    });
    this.credentialRefusals = new Counter({
      name: 'gateway_vendor_credential_refusals_total',
      help: "Calls failed because the vendor refused the gateway's own credential (401/403), by vendor: the operator must fix GATEWAY_VENDOR_<X>_KEY.",
      labelNames: ['vendor'],
      registers,
    });
    this.charged = new Counter({
      name: 'gateway_charged_nano_usd_total',
      help: 'Nano-USD charged to wallets, by vendor.',
      labelNames: ['vendor'],
      registers,
    });
    this.aboveHold = new Counter({
      name: 'gateway_usage_above_hold_total',
      help: "Calls whose reported usage cost more than their hold, by vendor: the vendor reported more than the body's bounds allow.",
      labelNames: ['vendor'],
      registers,
    });
    this.aboveHoldNano = new Counter({
      name: 'gateway_usage_above_hold_nano_usd_total',
      help: 'Nano-USD by which reported usage passed the calls’ holds, by vendor (charged as far as each wallet went).',
      labelNames: ['vendor'],
      registers,
    });
    this.reloads = new Counter({
      name: 'gateway_reloads_total',
      help: 'Catalog and config reloads, by result (ok, refused).',
      labelNames: ['result'],
      registers,
      aggregator: 'max',
    });
    this.lastReload = new Gauge({
      name: 'gateway_last_reload_ok',
      help: '1 when the last reload was applied, 0 when it was refused (1 before any reload).',
      registers,
      aggregator: 'min',
    });
    this.lastReload.set(1);
    this.scrapeTimeGauges(sources, registers);
    if (sources.leases) this.leaseGauges(sources.leases, registers);
    if (sources.charges) this.chargeGauges(sources.charges, registers);
    if (sources.ledgerAudit) this.auditGauges(sources.ledgerAudit, registers);
  }

  /** The gateway's state read at each scrape: the catalog version, single calls' holds, the database pool. */
  private scrapeTimeGauges(sources: MetricsSources, registers: Registry[]): void {
    const poolAtScrape = () => this.poolAtScrape;
    new Gauge({
      name: 'gateway_catalog_version',
      help: 'Version of the running catalog snapshot (1 at start, +1 per applied reload).',
      registers,
      aggregator: 'max',
      collect() {
        this.set(sources.runtime.snapshot().version);
      },
    });
    new Gauge({
      name: 'gateway_holds_in_flight',
      help: 'Reservations of single calls held in the ledger (calls under way that hold their own, all gateway processes); budget leases are in gateway_leases.',
      registers,
      aggregator: 'first',
      async collect() {
        const { rows } = await sources.db.query<{ n: string }>(
          "SELECT count(*)::text AS n FROM reservations WHERE state = 'held' AND call_id NOT LIKE $1",
          [`${LEASE_CALL_PREFIX}%`],
        );
        this.set(Number(rows[0]?.n ?? 0));
      },
    });
    new Gauge({
      name: 'gateway_db_pool_connections',
      help: 'Database connections by state (total, idle, waiting clients); the embedded database has one in-process connection.',
      labelNames: ['state'],
      registers,
      collect() {
        for (const [state, n] of Object.entries(poolAtScrape())) this.set({ state }, n);
      },
    });
  }

  private chargeGauges(charges: NonNullable<MetricsSources['charges']>, registers: Registry[]): void {
    new Gauge({
      name: 'gateway_charges',
      help:
        'Charges handed to the charge writer and not yet written (pending); of those, the ones whose answer already went out ' +
        '(at_risk: the database did not answer within ledger.commit_wait_ms) and those whose last write failed (failing).',
      labelNames: ['state'],
      registers,
      collect() {
        const s = charges.stats();
        this.set({ state: 'pending' }, s.pending);
        this.set({ state: 'at_risk' }, s.atRisk);
        this.set({ state: 'failing' }, s.failing);
      },
    });
    new Gauge({
      name: 'gateway_charges_given_up',
      help: 'Charges the ledger refused for good since start (logged at error level: a bug to look at).',
      registers,
      collect() {
        this.set(charges.stats().givenUp);
      },
    });
    new Gauge({
      name: 'gateway_unpaid_vendor_work_nano_usd',
      help: 'Vendor work since start that wallets could not pay (usage above the hold, past the balance), nano-USD.',
      registers,
      collect() {
        this.set(Number(charges.stats().shortfallNano));
      },
    });
  }

  private auditGauges(audit: NonNullable<MetricsSources['ledgerAudit']>, registers: Registry[]): void {
    // Read at scrape time. Before the first audit completes the series are absent (remove()), not 0: an
    // unlabelled gauge reads 0 otherwise, which would say "failed"; NaN would cross the workers' JSON channel
    // as null, which the min aggregator reads as 0 too.
    new Gauge({
      name: 'gateway_ledger_audit_ok',
      help: '1 when the last ledger audit found nothing wrong, 0 when a check failed (absent before the first audit).',
      registers,
      aggregator: 'min',
      collect() {
        const last = audit.last();
        if (last) this.set(last.ok ? 1 : 0);
        else this.remove();
      },
    });
    new Gauge({
      name: 'gateway_ledger_audit_failures',
      help: 'Rows the last ledger audit found breaking each check (0 when it passed).',
      labelNames: ['check'],
      registers,
      aggregator: 'max',
      collect() {
        const last = audit.last();
        for (const check of LEDGER_CHECKS) {
          const n = last?.failures[check];
          if (n === undefined) this.remove({ check });
          else this.set({ check }, n);
        }
      },
    });
    new Gauge({
      name: 'gateway_ledger_audit_last_run_seconds',
      help: 'Unix time of the last ledger audit that completed (absent before the first).',
      registers,
      aggregator: 'max',
      collect() {
        const last = audit.last();
        if (last) this.set(last.at.getTime() / 1000);
        else this.remove();
      },
    });
  }

  private leaseGauges(leases: NonNullable<MetricsSources['leases']>, registers: Registry[]): void {
    // Read at scrape time from one snapshot: the figures of one scrape belong together.
    new Gauge({
      name: 'gateway_lease_draws_pending',
      help: 'Charges of calls on a budget lease decided and not yet written (this process); their answers end once they are.',
      registers,
      collect() {
        this.set(leases.stats().pendingDraws);
      },
    });
    new Gauge({
      name: 'gateway_leases',
      help: 'Budget leases this process holds, and their unspent nano-USD (billing.yaml leases).',
      labelNames: ['figure'],
      registers,
      collect() {
        const s = leases.stats();
        this.set({ figure: 'held' }, s.leases);
        this.set({ figure: 'unspent_nano_usd' }, Number(s.unspentNano));
      },
    });
    new Gauge({
      name: 'gateway_lease_admissions',
      help: 'Calls since start admitted on a budget lease (leased) or that took the exact path while leases were on (exact).',
      labelNames: ['path'],
      registers,
      collect() {
        const s = leases.stats();
        this.set({ path: 'leased' }, s.admitted);
        this.set({ path: 'exact' }, s.missed);
      },
    });
  }

  private gatherAcrossWorkers: (() => Promise<unknown[][]>) | null = null;

  /** Under GATEWAY_WORKERS: scrapes answer for every worker, as `gather` (engine/process/workers.ts) collects them. */
  acrossWorkers(gather: () => Promise<unknown[][]>): void {
    this.gatherAcrossWorkers = gather;
  }

  /** This process's metrics, as the primary collects them from each worker. */
  ownMetrics(): Promise<unknown[]> {
    this.notePoolUse();
    return this.registry.getMetricsAsJSON();
  }

  /** The Prometheus text a scrape gets: this process's metrics, or every worker's added up. */
  async exposition(): Promise<string> {
    if (!this.gatherAcrossWorkers) {
      this.notePoolUse();
      return this.registry.metrics();
    }
    const perWorker = (await this.gatherAcrossWorkers()) as MetricObjectWithValues<MetricValue<string>>[][];
    return AggregatorRegistry.aggregate(perWorker).metrics();
  }

  private notePoolUse(): void {
    this.poolAtScrape = this.sources.db.poolUse?.() ?? EMBEDDED_POOL;
  }

  /** One finished request (engine/http/access-log.ts). */
  observe(o: RequestOutcome): void {
    const c = o.call;
    this.requests.inc({ door: c?.door ?? '', model: c?.model ?? '', vendor: c?.vendor ?? '', status: String(o.status) });
    if (!c) return;
    const door = c.door ?? '';
    this.duration.observe({ door }, o.durationMs / 1000);
    this.ttfb.observe({ door }, o.ttfbMs / 1000);
    for (const route of c.failedRoutes) this.fallbacks.inc({ route });
    if (c.refusedStatus) this.refusals.inc({ status: String(c.refusedStatus) });
    if (c.credentialRefused) this.credentialRefusals.inc({ vendor: c.credentialRefused });
    if (c.chargedNano && c.vendor) this.chargedTo(c.vendor, c.chargedNano);
    if (c.aboveHoldNano && c.vendor) {
      this.aboveHold.inc({ vendor: c.vendor });
      this.aboveHoldNano.inc({ vendor: c.vendor }, Number(c.aboveHoldNano));
    }
  }

  /** A charge written: a call's when its answer is finished, a video job's when the worker settles it. */
  chargedTo(vendor: string, nano: bigint): void {
    if (nano > 0n) this.charged.inc({ vendor }, Number(nano));
  }

  reloaded(result: ReloadResult): void {
    this.reloads.inc({ result: result.ok ? 'ok' : 'refused' });
    this.lastReload.set(result.ok ? 1 : 0);
  }
}
