// A call's last stage, after admit and exchange: its hold is charged once at the recorded usage's cost, or released.
// The answer's last byte waits for the charge's commit (bounded by `commitWaitMs`), so a gateway killed outright
// has charged every answer a client received in full (docs/money.md, "A crash at each step").
import type { FastifyBaseLogger } from 'fastify';
import type { Snapshot } from '../catalog/runtime.ts';
import { type AppliedPrices, appliedPrices, chargeAt } from '../catalog/usage-cost.ts';
import type { StoredAnswer } from '../core/protocol.ts';
import type { ModelEntry, Usage } from '../core/types.ts';
import type { CallFacts } from '../http/call-facts.ts';
import type { Accounts, Caller, ChargeRows, Hold } from '../money/accounts.ts';
import type { CallTrace } from '../telemetry/call-trace.ts';
import { GATEWAY } from '../telemetry/genai.ts';
import { usageRecordRows } from '../usage/records.ts';
import { vendorResponseRows } from '../usage/vendor-responses.ts';

/** billing.yaml ledger.commit_wait_ms when unset. */
const DEFAULT_COMMIT_WAIT_MS = 3_000;
/** How long an answer going out before its charge waits for its hold's mark (kept-holds.ts). */
const HOLD_MARK_WAIT_MS = 1_000;

interface CallChargeDeps {
  accounts: Accounts;
  log: Pick<FastifyBaseLogger, 'error'>;
  /** The cost of the usage in nano-USD, at the catalog's prices. */
  costOf: (usage: Usage) => bigint;
  /** The call's charge rows (its usage record, the answer the vendor stored), written by the settle's own transaction. */
  chargeRowsOf?: (usage: Usage, stored: StoredAnswer | null) => ChargeRows;
  /** How long the answer's end waits for its charge to be committed (billing.yaml ledger.commit_wait_ms). */
  commitWaitMs: number;
  /** The call's trace, when telemetry is on: the settle is a span of it, and the charge goes on the call's span. */
  trace?: CallTrace | null;
}

/** Charges once: the usage of the answer the vendor produced, or releases the hold when nothing was recorded. */
export class CallCharge {
  private usage: Usage | null = null;
  private stored: StoredAnswer | null = null;
  private finished: Promise<bigint> | null = null;
  private quoted: { usage: Usage; cost: bigint } | null = null;

  constructor(
    private readonly caller: Caller,
    private readonly hold: Hold | null,
    private readonly deps: CallChargeDeps,
  ) {}

  record(usage: Usage): void {
    this.usage = usage;
  }

  /** The cost of `usage`, priced once: a charge of that usage is this amount (an answer says it before its charge). */
  quote(usage: Usage): bigint {
    if (this.quoted?.usage !== usage) this.quoted = { usage, cost: this.deps.costOf(usage) };
    return this.quoted.cost;
  }

  /** What the answering route's answer says the vendor stored, told once that route answers the call. */
  stores(answer: StoredAnswer | null): void {
    this.stored = answer;
  }

  /** Settles once; resolves with what was charged (0 when released or free) once it is committed, or the wait ran out. */
  finish(): Promise<bigint> {
    this.finished ??= this.deps.trace ? this.traced(this.deps.trace) : this.run();
    return this.finished;
  }

  private async traced(trace: CallTrace): Promise<bigint> {
    const span = trace.step('settle', { [GATEWAY.settleOutcome]: this.hold === null ? 'free' : this.usage ? 'charge' : 'release' });
    const charged = await this.run();
    if (this.usage) trace.usage(this.usage);
    trace.charged(charged);
    span.end();
    return charged;
  }

  private async run(): Promise<bigint> {
    const { hold, usage, deps } = this;
    if (!hold) return 0n;
    if (!usage) {
      // Nothing reached the client: the hold goes back. A release the database did not take is the sweeper's.
      await deps.accounts
        .release(hold)
        .catch((e: unknown) => deps.log.error({ err: e, callId: hold.callId }, 'release failed; the sweeper returns the hold'));
      return 0n;
    }
    const cost = this.quote(usage);
    const charge = deps.accounts.charge(this.caller, hold, cost, deps.chargeRowsOf?.(usage, this.stored));
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<null>((r) => (timer = setTimeout(() => r(null), deps.commitWaitMs)));
    try {
      const charged = await Promise.race([charge.committed, waited]);
      if (charged !== null) return charged;
      if (charge.answeredFirst()) {
        // The hold marked as owed first, or the sweeper could give it back after a kill (kept-holds.ts); bounded,
        // as the database that did not take the charge may not take the mark either.
        await Promise.race([charge.holdMarked(), new Promise((r) => setTimeout(r, HOLD_MARK_WAIT_MS).unref())]);
        return cost;
      }
      // Not kept on disk (the spool cannot be written): a kill after the answer would leave it free, so the
      // answer's end waits for the commit itself, as long as the writer tries.
      deps.log.error({ callId: hold.callId }, 'charge neither committed nor kept on disk: the answer waits for the commit');
      return await charge.committed;
    } catch (e) {
      // Given up by the writer (a refusal no retry mends), already logged there: nothing was charged.
      deps.log.error({ err: e, callId: hold.callId }, 'charge not written');
      return 0n;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** What a model door knows of its call once the hold is taken: enough to price the usage and draw up its record. */
interface ChargedCall {
  accounts: Accounts;
  log: Pick<FastifyBaseLogger, 'error'>;
  snap: Snapshot;
  caller: Caller;
  hold: Hold | null;
  model: ModelEntry;
  door: string;
  requestId: string;
  /** When the call was admitted: the instant its prices are read at. */
  at: Date;
  now: () => Date;
  elapsedMs: () => number;
  facts: CallFacts;
  trace: CallTrace | null;
}

/**
 * The charge of a model door's call: its cost at the catalog's prices in force when it was admitted, and its charge
 * rows (the usage record, with those prices, and the answer the vendor stored) drawn up when it is charged. The
 * record keeps the prices the charge is computed at: the same function of the same snapshot and instant.
 */
export function chargeForCall(c: ChargedCall): CallCharge {
  const pricing = { billing: c.snap.config.billing, modelById: (id: string) => c.snap.catalog.models.get(id), at: c.at };
  const prices = (usage: Usage) => appliedPrices(c.model, usage, pricing);
  // The prices the cost was computed at: the charge settles once, pricing its usage first, and its record keeps them.
  let charged: { usage: Usage; prices: AppliedPrices } | undefined;
  return new CallCharge(c.caller, c.hold, {
    accounts: c.accounts,
    log: c.log,
    commitWaitMs: c.snap.config.billing.ledger?.commit_wait_ms ?? DEFAULT_COMMIT_WAIT_MS,
    trace: c.trace,
    costOf: (usage) => {
      charged = { usage, prices: prices(usage) };
      return noteAboveHold(c.facts, c.hold, noteUsage(c.facts, usage) ?? chargeAt(charged.prices, usage));
    },
    // Drawn up when the call is charged; the write keeps only the rows (a charge written behind the reply must not
    // keep the request and reply alive).
    chargeRowsOf: (usage, stored) => {
      const at = c.now();
      const draft = {
        requestId: c.requestId,
        walletId: c.caller.walletId,
        keyId: c.caller.keyId,
        at,
        door: c.door,
        model: c.model.id,
        vendor: c.model.vendor,
        route: c.facts.route ?? null,
        fallbackDepth: c.facts.fallbackDepth ?? 0,
        usage,
        durationMs: c.elapsedMs(),
        traceId: c.facts.traceId ?? null,
        prices: charged?.usage === usage ? charged.prices : prices(usage),
      };
      return [...usageRecordRows(draft), ...vendorResponseRows({ walletId: c.caller.walletId, answer: stored, at })];
    },
  });
}

/** Tokens in (cache reads and writes included) and out, for the call's log line; undefined so the cost is computed. */
function noteUsage(facts: CallFacts, usage: Usage): undefined {
  facts.tokensIn = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
  facts.tokensOut = usage.output_tokens;
  return undefined;
}

/**
 * A cost above the call's hold: the vendor reported more than the body let it do (or the bounds missed a way).
 * Charged as far as the wallet goes and counted on the key's limits all the same (docs/api.md); the metrics
 * count such calls per vendor so an operator sees which vendor, or which bound, to look at.
 */
function noteAboveHold(facts: CallFacts, hold: Hold | null, cost: bigint): bigint {
  if (hold && cost > hold.amountNano) facts.aboveHoldNano = cost - hold.amountNano;
  return cost;
}
