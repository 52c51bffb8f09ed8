// The chaos harness: for one fault kind, R runs of C calls in flight through the real gateway over loopback
// (vendor B passthrough and vendor A translated on the chat door, the messages and responses doors, streaming
// and not), then the ledger auditor over every call. A fault kind is a table entry (see faults.ts): what to
// inject into the simulator before a run, what the client does to its call, and optionally what runs beside
// the calls (a database restart, say) with its own setup and teardown.
import type { Db } from '../../engine/db/db.ts';
import type { Fault, Simulator } from '../../simulator/index.ts';
import { type AuditReport, auditLedger, type BucketPrices } from '../helpers/auditor.ts';

/**
 * What the harness drives: a gateway's URL, the simulator its vendor routes point at (`a0`, `a1`, `b0`, `b1`),
 * its database, and a way to make wallets and keys. An in-process gateway gives one (chaos-gateway.ts); a
 * child process on the same PostgreSQL can give one too, for faults that kill or restart processes.
 */
export interface ChaosTarget {
  url: string;
  sim: Simulator;
  db: Db;
  newWallet(credits: number): Promise<string>;
  newApiKey(walletId: string, name: string): Promise<{ id: string; key: string }>;
  /** Called once a run's wallet and keys exist, right before its calls (a lease-mode gateway takes its leases here). */
  beforeCalls?: ((walletId: string) => Promise<void>) | undefined;
  /** Holds still `held` on these wallets; default: counted in `db` (which an embedded database's child owns). */
  heldCount?: ((walletIds: readonly string[]) => Promise<number>) | undefined;
  /** After the last run, before the audit: makes `db` readable (an embedded database is stopped and opened here). */
  beforeAudit?: (() => Promise<void>) | undefined;
}

/** Catalog prices, USD per 1M tokens, copied by hand from catalog/vendor-a.yaml and vendor-b.yaml. */
export const CHAOS_PRICES: Record<string, BucketPrices> = {
  'a-top-5.5': { input: 5, output: 25, cache_read: 0.5, cache_write: 6.25 },
  'b-5': { input: 1.25, output: 10, cache_read: 0.125 },
};

export type Door = '/v1/chat/completions' | '/v1/messages' | '/v1/responses';

export interface CallShape {
  name: string;
  door: Door;
  model: keyof typeof CHAOS_PRICES;
  /** The vendor whose primary route (`<v>0`) faults are injected on. */
  vendor: 'a' | 'b';
  stream: boolean;
  /** The marker of the last content frame of a stream (for a client that leaves right after it). */
  lastContent?: string;
}

/** Every kind of call the suite makes; a run of 8 calls makes each once. */
export const SHAPES: readonly CallShape[] = [
  { name: 'chat b-5', door: '/v1/chat/completions', model: 'b-5', vendor: 'b', stream: false },
  { name: 'chat b-5 stream', door: '/v1/chat/completions', model: 'b-5', vendor: 'b', stream: true, lastContent: '"finish_reason":"' },
  { name: 'chat a-top (translated)', door: '/v1/chat/completions', model: 'a-top-5.5', vendor: 'a', stream: false },
  {
    name: 'chat a-top stream (translated)',
    door: '/v1/chat/completions',
    model: 'a-top-5.5',
    vendor: 'a',
    stream: true,
    lastContent: '"finish_reason":"',
  },
  { name: 'messages a-top', door: '/v1/messages', model: 'a-top-5.5', vendor: 'a', stream: false },
  {
    name: 'messages a-top stream',
    door: '/v1/messages',
    model: 'a-top-5.5',
    vendor: 'a',
    stream: true,
    lastContent: '"type":"content_block_stop"',
  },
  { name: 'responses b-5', door: '/v1/responses', model: 'b-5', vendor: 'b', stream: false },
  {
    name: 'responses b-5 stream',
    door: '/v1/responses',
    model: 'b-5',
    vendor: 'b',
    stream: true,
    lastContent: 'event: response.output_text.done',
  },
];

/** One call about to be made: its shape, its own key and its tag. */
export interface ChaosCall {
  shape: CallShape;
  tag: string;
  apiKey: string;
  keyId: string;
  walletId: string;
  url: string;
  path: Door;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export interface ChaosContext {
  t: ChaosTarget;
  db: Db;
  run: number;
}

export interface FaultCase {
  name: string;
  /** The faults put on the simulator before each run, per route; cleared after the run. */
  inject?: (calls: readonly ChaosCall[], ctx: ChaosContext) => { route: string; fault: Fault }[];
  /** What the client does with its call, the `index`th of its run (default: reads the answer to its end). Never throws. */
  client?: (call: ChaosCall, ctx: ChaosContext, index: number) => Promise<void>;
  /** Which shapes the runs use (default: all). */
  shapes?: (s: CallShape) => boolean;
  /** Runs beside the calls of each run (the place for database faults). */
  during?: (ctx: ChaosContext) => Promise<void>;
  /** Once before the first run and after the last (for a `during` that needs them). */
  setup?: (ctx: Omit<ChaosContext, 'run'>) => Promise<void>;
  teardown?: (ctx: Omit<ChaosContext, 'run'>) => Promise<void>;
  /** How long holds may take to end after the calls returned (a stall's time limit, say). Default 5 s. */
  settleMs?: number;
  /**
   * For a fault that kills the gateway: how many calls may lose their charge (answered by the vendor, settled by
   * nobody), given the calls made. Those are reported in the row, not failed; every other invariant holds.
   */
  lossBound?: (calls: number) => number;
  /** Invariants of this fault beyond the ledger's, checked after the last run (with the audit): one line per problem. */
  check?: (ctx: Omit<ChaosContext, 'run'>, calls: readonly ChaosCall[], report: AuditReport) => Promise<string[]>;
}

export interface ChaosRow {
  fault: string;
  runs: number;
  calls: number;
  answered: number;
  estimated: number;
  refused: number;
  lostNano: bigint;
  createdNano: bigint;
  estimateGapNano: bigint;
  holdsLeft: number;
  /** Calls charged through a budget lease. */
  leased: number;
  /** Vendor requests of these calls that a fault acted on: a kind whose fault never fired proves nothing. */
  faulted: number;
  ms: number;
}

export interface ChaosResult {
  row: ChaosRow;
  report: AuditReport;
}

function bodyFor(shape: CallShape, tag: string): Record<string, unknown> {
  // Long enough that a stream has several events to cut between; the usage is the simulator's own count.
  const text = `chaos call [[sim:call=${tag}]] [[sim:long=12]]`;
  const stream = shape.stream ? { stream: true } : {};
  if (shape.door === '/v1/responses') return { model: shape.model, input: text, max_output_tokens: 400, ...stream };
  if (shape.door === '/v1/messages') return { model: shape.model, max_tokens: 400, messages: [{ role: 'user', content: text }], ...stream };
  // Vendor B's chat models take max_completion_tokens; the gateway refuses max_tokens for them, as the vendor does.
  const limit = shape.vendor === 'b' ? { max_completion_tokens: 400 } : { max_tokens: 400 };
  return { model: shape.model, ...limit, messages: [{ role: 'user', content: text }], ...stream };
}

/** Reads the whole answer; a broken connection is an outcome like any other. */
export async function readToEnd(call: ChaosCall): Promise<void> {
  try {
    const res = await fetch(call.url + call.path, { method: 'POST', headers: call.headers, body: JSON.stringify(call.body) });
    await res.arrayBuffer();
  } catch {
    /* a reset is one of the outcomes under test */
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function heldCount(db: Db, walletIds: readonly string[]): Promise<number> {
  const r = await db.query<{ n: string }>(`SELECT count(*) AS n FROM reservations WHERE wallet_id = ANY($1) AND state = 'held'`, [
    [...walletIds],
  ]);
  return Number(r.rows[0]!.n);
}

let tagCounter = 0;

/** Runs one fault kind `runs` times with `callsPerRun` calls in flight, then audits every call. */
export async function runFault(t: ChaosTarget, fc: FaultCase, runs: number, callsPerRun: number): Promise<ChaosResult> {
  const started = Date.now();
  const shapes = SHAPES.filter(fc.shapes ?? (() => true));
  const db = t.db;
  const base = { t, db };
  const held = t.heldCount ?? ((ids: readonly string[]) => heldCount(db, ids));
  await fc.setup?.(base);
  const walletIds: string[] = [];
  const calls: ChaosCall[] = [];
  try {
    for (let run = 0; run < runs; run++) {
      const ctx: ChaosContext = { ...base, run };
      // $100: no charge is capped by the wallet's balance.
      const wallet = { id: await t.newWallet(100_000_000) };
      walletIds.push(wallet.id);
      const batch: ChaosCall[] = [];
      for (let i = 0; i < callsPerRun; i++) {
        const shape = shapes[(run * callsPerRun + i) % shapes.length]!;
        const key = await t.newApiKey(wallet.id, `chaos-${i}`);
        const tag = `c${process.pid}-${++tagCounter}`;
        const headers: Record<string, string> = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };
        if (shape.door === '/v1/messages') headers['anthropic-version'] = '2023-06-01';
        batch.push({
          shape: shape!,
          tag,
          apiKey: key.key,
          keyId: key.id,
          walletId: wallet.id,
          url: t.url,
          path: shape.door,
          headers,
          body: bodyFor(shape, tag),
        });
      }
      await t.beforeCalls?.(wallet.id);
      for (const { route, fault } of fc.inject?.(batch, ctx) ?? []) t.sim.inject(route, fault);
      const client = fc.client ?? ((c: ChaosCall) => readToEnd(c));
      await Promise.all([...batch.map((c, i) => client(c, ctx, i)), fc.during?.(ctx)]);
      t.sim.clearFaults();
      calls.push(...batch);
      const deadline = Date.now() + (fc.settleMs ?? 5_000);
      while ((await held([wallet.id])) > 0 && Date.now() < deadline) await sleep(10);
    }
  } finally {
    await fc.teardown?.(base);
  }
  await t.beforeAudit?.();
  await t.sim.outcomesSettled(15_000);
  const report = await auditLedger({
    db,
    walletIds,
    calls: calls.map((c) => ({ tag: c.tag, walletId: c.walletId, keyId: c.keyId, model: c.shape.model })),
    outcomes: t.sim.outcomes,
    pricesOf: (model) => {
      const p = CHAOS_PRICES[model];
      if (!p) throw new Error(`no price copied for ${model}`);
      return p;
    },
  });
  report.problems.push(...((await fc.check?.(base, calls, report)) ?? []));
  const f = report.figures;
  const tags = new Set(calls.map((c) => c.tag));
  return {
    report,
    row: {
      fault: fc.name,
      runs,
      calls: calls.length,
      answered: f.answered,
      estimated: f.estimated,
      refused: f.refused,
      lostNano: f.lostNano,
      createdNano: f.createdNano,
      estimateGapNano: f.estimateGapNano,
      holdsLeft: f.holdsLeft,
      leased: f.leased,
      faulted: t.sim.outcomes.filter((o) => o.fault !== null && o.callTag !== null && tags.has(o.callTag)).length,
      ms: Date.now() - started,
    },
  };
}
