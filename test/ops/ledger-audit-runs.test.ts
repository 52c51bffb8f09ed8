// How the ledger audit runs beside the gateway: one at a time per process, a query that fails is a warning
// and changes nothing, billing.yaml's `ledger.audit_interval_ms` sets its timer (0: none), and under
// GATEWAY_WORKERS its gauges add up to the most alarming worker's figures, a worker that has not audited yet
// counting for nothing (not for a failure).
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import type { Db, Queryable } from '../../engine/db/db.ts';
import { type AuditTurn, LedgerAuditor, type LedgerAuditRun } from '../../engine/money/audit.ts';
import { databaseAuditTurn } from '../../engine/money/audit-turn.ts';
import { GatewayMetrics } from '../../engine/observe/metrics.ts';
import { sleep } from '../e2e/e2e.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { series } from '../helpers/metrics-text.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

/** A database whose queries wait for `open()` when gated, fail while `failing`, and find nothing wrong. */
function fakeDb() {
  const state = { queries: 0, failing: false, gate: null as Promise<void> | null };
  const db: Queryable = {
    async query<T>() {
      state.queries += 1;
      await state.gate;
      if (state.failing) throw new Error('connection terminated');
      return { rows: [] as T[], rowCount: 0 };
    },
  };
  return { db, state };
}

function logged() {
  const lines: { level: 'warn' | 'error'; o: any; msg: string }[] = [];
  const log = {
    warn: (o: object, msg: string) => lines.push({ level: 'warn', o, msg }),
    error: (o: object, msg: string) => lines.push({ level: 'error', o, msg }),
  };
  return { lines, log: () => log };
}

/** The turn of a process alone on its database: every tick is its turn. */
const alone: AuditTurn = { take: async () => true, publish: async () => {}, latest: async () => null };

describe('the ledger auditor', () => {
  it('runs one audit at a time: a second run joins the one under way', async () => {
    const { db, state } = fakeDb();
    let open!: () => void;
    state.gate = new Promise((r) => (open = r));
    const auditor = new LedgerAuditor({ db, clock: fixedClock('2026-11-21T03:00:00Z'), holdGraceMs: 1000, log: logged().log, turn: alone });
    const first = auditor.run();
    const second = auditor.run();
    expect(second).toBe(first);
    open();
    const run = await first;
    expect(run).toMatchObject({ ok: true, at: new Date('2026-11-21T03:00:00Z') });
    expect(state.queries).toBe(2); // one audit: two statements
    await auditor.run();
    expect(state.queries).toBe(4);
  });

  it('a query that fails is logged at warn, throws nowhere, and leaves the last result standing', async () => {
    const { db, state } = fakeDb();
    const { lines, log } = logged();
    const auditor = new LedgerAuditor({ db, clock: fixedClock('2026-11-21T03:00:00Z'), holdGraceMs: 1000, log, turn: alone });
    const good = await auditor.run();
    state.failing = true;
    await expect(auditor.run()).resolves.toBeNull();
    expect(auditor.last()).toBe(good);
    expect(lines).toEqual([{ level: 'warn', o: { err: expect.any(Error) }, msg: 'ledger audit could not run' }]);
  });

  it('audits every interval once started, never with 0, and not after stop()', async () => {
    const { db, state } = fakeDb();
    const off = new LedgerAuditor({ db, clock: fixedClock('2026-11-21T03:00:00Z'), holdGraceMs: 1000, log: logged().log, turn: alone });
    off.start(0);
    await sleep(100);
    expect(state.queries).toBe(0);
    const on = new LedgerAuditor({ db, clock: fixedClock('2026-11-21T03:00:00Z'), holdGraceMs: 1000, log: logged().log, turn: alone });
    on.start(20);
    await sleep(150);
    await on.stop();
    const seen = state.queries;
    expect(seen).toBeGreaterThanOrEqual(6);
    await sleep(100);
    expect(state.queries).toBe(seen);
  });
});

describe('the audit gauges across workers', () => {
  const runtime = new Runtime({ config: 'config', catalog: 'catalog' });
  const db = { query: async () => ({ rows: [{ n: '0' }], rowCount: 1 }) } as unknown as Db;
  const run = (ok: boolean, at: string, failures: Record<string, number>): LedgerAuditRun => ({
    ok,
    failures,
    examples: {},
    at: new Date(at),
    durationMs: 1,
  });
  const worker = (last: LedgerAuditRun | null) => new GatewayMetrics({ db, runtime, ledgerAudit: { last: () => last } });

  /** What a scrape reaching the first worker answers, every worker's metrics having crossed the JSON channel. */
  async function scrape(workers: GatewayMetrics[]): Promise<string> {
    const own = await Promise.all(
      workers.map(async (w) => JSON.parse(JSON.stringify(await w.ownMetrics())) as MetricObjectWithValues<MetricValue<string>>[]),
    );
    return AggregatorRegistry.aggregate(own).metrics();
  }

  it('ok is the lowest worker, failures and the last run the highest; a worker yet to audit counts for nothing', async () => {
    const passed = worker(run(true, '2026-11-21T03:00:00Z', { wallet_journal: 0, hold_lots: 0 }));
    const failed = worker(run(false, '2026-11-21T02:55:00Z', { wallet_journal: 3, hold_lots: 0 }));
    const fresh = worker(null);
    const text = await scrape([passed, failed, fresh]);
    expect(series(text, 'gateway_ledger_audit_ok')).toBe(0);
    expect(series(text, 'gateway_ledger_audit_failures', { check: 'wallet_journal' })).toBe(3);
    expect(series(text, 'gateway_ledger_audit_failures', { check: 'hold_lots' })).toBe(0);
    expect(series(text, 'gateway_ledger_audit_last_run_seconds')).toBe(Date.parse('2026-11-21T03:00:00Z') / 1000);

    const calm = await scrape([passed, fresh]);
    expect(series(calm, 'gateway_ledger_audit_ok')).toBe(1);
    const none = await scrape([fresh, worker(null)]);
    expect(series(none, 'gateway_ledger_audit_ok')).toBeUndefined();
    expect(series(none, 'gateway_ledger_audit_last_run_seconds')).toBeUndefined();
  });
});

describe("billing.yaml's ledger.audit_interval_ms", () => {
  let tree: TempTree | undefined;
  let t: TestGateway | undefined;
  afterEach(async () => {
    await t?.close();
    tree?.remove();
    t = tree = undefined;
  });

  async function gatewayAuditingEvery(ms: number, lines: Record<string, any>[]) {
    tree = tempCatalogTree();
    tree.edit('config/billing.yaml', (text) => text.replace('audit_interval_ms: 300000', `audit_interval_ms: ${ms}`));
    t = await startTestGateway({
      dirs: { config: tree.config, catalog: tree.catalog },
      logger: { level: 'info', stream: { write: (l) => lines.push(JSON.parse(l)) } },
    });
    return t;
  }

  it('sets how often the gateway audits on its own, and logs a failed check at error level', async () => {
    const lines: Record<string, any>[] = [];
    const g = await gatewayAuditingEvery(100, lines);
    await g.gw.db.query('UPDATE credit_lots SET reserved_nano = reserved_nano + 1 WHERE wallet_id = $1', [g.walletId]);
    for (let i = 0; i < 100 && !lines.some((l) => l.msg === 'ledger audit failed'); i++) await sleep(20);
    const line = lines.find((l) => l.msg === 'ledger audit failed');
    expect(line).toMatchObject({
      level: 50,
      checks: ['wallet_journal', 'lot_journal'],
      examples: { wallet_journal: [{ walletId: g.walletId }] },
    });
    expect(g.gw.ledgerAudit.last()?.ok).toBe(false);
  });

  it('0 turns it off', async () => {
    const g = await gatewayAuditingEvery(0, []);
    await sleep(300);
    expect(g.gw.ledgerAudit.last()).toBeNull();
  });
});

describeEachDatabase('audit turns shared by processes on one database', (getDb) => {
  /** Counts audits: the statement of the journal checks, one per audit. */
  function counting(db: Queryable) {
    const counts = { audits: 0 };
    const wrapped: Queryable = {
      query: (sql, params) => {
        if (sql.includes("'wallet_journal'")) counts.audits += 1;
        return db.query(sql, params);
      },
    };
    return { wrapped, counts };
  }

  it('one process audits per turn; the other shows what it found; the turn comes round again after the interval', async () => {
    const db = getDb();
    const clock = fixedClock('2026-11-21T03:00:00Z');
    const interval = 2_000; // the turn falls due again after 1.8 s of the database's clock
    const a = counting(db);
    const b = counting(db);
    const auditorA = new LedgerAuditor({ db: a.wrapped, clock, holdGraceMs: 1000, log: logged().log, turn: databaseAuditTurn(db) });
    const auditorB = new LedgerAuditor({ db: b.wrapped, clock, holdGraceMs: 1000, log: logged().log, turn: databaseAuditTurn(db) });
    await Promise.all([auditorA.tick(interval), auditorB.tick(interval)]);
    expect(a.counts.audits + b.counts.audits).toBe(1);
    const [auditor, other] = a.counts.audits === 1 ? [auditorA, auditorB] : [auditorB, auditorA];
    expect(auditor.last()).toMatchObject({ ok: true });
    await other.tick(interval); // not its turn: takes up the published result
    expect(a.counts.audits + b.counts.audits).toBe(1);
    expect(other.last()).toEqual(auditor.last());

    // A ledger made wrong: the next turn finds it, and the process that did not audit shows the failure too.
    await db.query(`INSERT INTO wallets (id, owner_id) VALUES ('wal_turns', 'owner_turns')`, []);
    await db.query(`INSERT INTO credit_lots (id, wallet_id, granted_nano, available_nano) VALUES ('lot_turns', 'wal_turns', 5, 5)`, []);
    await sleep(interval);
    await Promise.all([auditorA.tick(interval), auditorB.tick(interval)]);
    expect(a.counts.audits + b.counts.audits).toBe(2);
    await Promise.all([auditorA.tick(interval), auditorB.tick(interval)]);
    expect(auditorA.last()?.ok).toBe(false);
    expect(auditorB.last()?.ok).toBe(false);
    expect(auditorB.last()?.at).toEqual(auditorA.last()?.at);
  });
});
