// The front half of every call (authenticate before the body is read, read it bounded, prepare, hold the most it
// can cost), shared by model doors and video jobs so that a call refused anywhere here has held and charged nothing.
import type { FastifyRequest } from 'fastify';
import type { DoorConfig } from '../catalog/config.ts';
import type { Runtime, Snapshot } from '../catalog/runtime.ts';
import { clientFormat } from '../catalog/wire-format.ts';
import type { HeldTokens } from '../core/call.ts';
import type { Clock } from '../core/clock.ts';
import { nextKoreanMidnight } from '../core/clock.ts';
import { errors, GatewayError, isGatewayError } from '../core/errors.ts';
import { nanoToCreditsCeil, nanoToCreditsFloor } from '../core/money.ts';
import type { CallFacts } from '../http/call-facts.ts';
import { depthRefusal } from '../http/json-depth.ts';
import type { RequestBody } from '../http/request-body.ts';
import { requestSlot } from '../http/request-slots.ts';
import type { Accounts, Caller, Hold, Room } from '../money/accounts.ts';
import type { CallTrace } from '../telemetry/call-trace.ts';
import { errorTypeOf, GATEWAY } from '../telemetry/genai.ts';
import { clientSentOutputLimit, type FittedQuote, lowerOutputToRoom, type NothingFits, shortestAnswer } from './affordable-output.ts';
import { refuseInputPastContext } from './context-window.ts';
import { holdFor } from './hold-size.ts';
import { type PreparedCall, prepareCall, type TransformRegistry } from './prepare.ts';

export interface FrontHalfDeps {
  runtime: Runtime;
  accounts: Accounts;
  registry: TransformRegistry;
  clock: Clock;
}

/** How a door reads its request: the JSON body, or a form's values with its files kept aside. */
export type BodyReader = (req: FastifyRequest, door: DoorConfig, snap: Snapshot) => Promise<RequestBody>;

/** A call prepared and not yet holding money: one snapshot and one instant for all of it. */
export interface PreparedRequest extends RequestBody {
  snap: Snapshot;
  door: DoorConfig;
  now: Date;
  caller: Caller;
  prepared: PreparedCall;
}

/**
 * What to hold for a prepared call: an amount under an id, or nothing at all (`amount: null`). `advice` says what
 * the client can change to hold less, for the 402 when the balance is short.
 */
type HoldPlan =
  | { amount: bigint; holdId: string; advice?: string; written?: FittedQuote['written']; heldTokens?: HeldTokens }
  | { amount: null };

/** The prepared call, its plan and its hold: a hold exactly when the plan named an amount. */
type AdmittedCall<P extends HoldPlan> = PreparedRequest &
  ({ plan: Extract<P, { amount: bigint }>; hold: Hold } | { plan: Extract<P, { amount: null }>; hold: null });

interface Admission<P extends HoldPlan> {
  /** The door's name in config/doors.yaml. */
  door: string;
  readBody: BodyReader;
  /** What to hold; it may refuse the call (a parameter the door checks itself) before anything is held. */
  planHold: (call: PreparedRequest) => P | Promise<P>;
  /** What to hold instead when the plan's hold is refused for money (`refusal`: 402, or 429 for a monthly limit); null: the refusal stands. */
  lowerHold?: (call: PreparedRequest, refusal: GatewayError) => Promise<P | null>;
  /** The call's trace, when telemetry is on: told what was asked, and the hold is a span of it. */
  trace?: CallTrace | null;
}

/** Refusals a smaller hold may avoid: the wallet's credit, the key's monthly limit. */
const refusedForMoney = (e: unknown): boolean => isGatewayError(e) && (e.type === 'insufficient_credit' || e.type === 'key_limit_exceeded');

/** Callers authenticated by a door's onRequest hook, for the handler of the same request. */
const earlyCallers = requestSlot<Caller>('early_caller');

/**
 * A door's onRequest hook: the key is checked before a byte of the body is read, so a request without a
 * valid key gets its 401 without the gateway reading, buffering or parsing a body of up to the body limit.
 */
export function authenticateBeforeBody(deps: Pick<FrontHalfDeps, 'runtime' | 'accounts'>, doorName: string) {
  return async (req: FastifyRequest): Promise<void> => {
    const door = configuredDoor(deps.runtime.snapshot(), doorName);
    earlyCallers.set(req, await deps.accounts.authenticate(req.headers, door.key_headers));
  };
}

export async function admitCall<P extends HoldPlan>(
  req: FastifyRequest,
  deps: FrontHalfDeps,
  admission: Admission<P>,
): Promise<AdmittedCall<P>> {
  const snap = deps.runtime.snapshot();
  const door = configuredDoor(snap, admission.door);
  const now = deps.clock.now();
  // The key is checked before the body is read (onRequest, or here), so no body is read for a refused key, and
  // again once it has arrived: a key closed while a slow body trickled in is refused, not served (the second
  // check is a cache hit unless the key changed meanwhile).
  if (!earlyCallers.get(req)) await deps.accounts.authenticate(req.headers, door.key_headers);
  const { body, files } = await admission.readBody(req, door, snap);
  const caller = await deps.accounts.authenticate(req.headers, door.key_headers);
  // A JSON body was bounded as it was parsed (engine/http/app.ts), so it is not walked again; a form's values sent
  // as JSON parts were not, and make a body of their own.
  const tooDeep = body === req.body ? null : depthRefusal(body, snap.config.limits.json_max_depth);
  if (tooDeep) throw tooDeep;
  const prepared = prepareCall(snap, door, body, req.headers, caller, deps.registry, { now, files });
  const call: PreparedRequest = { snap, door, now, caller, body, files, prepared };
  admission.trace?.requested(traceRequest(call));
  // A key or class with a daily limit plans and holds its calls one at a time here: each fits what those before it hold.
  const turn = deps.accounts.dayTurn(caller);
  const endTurn = turn === null ? null : await turn;
  try {
    const { plan, hold } = await planAndHold(deps, call, admission);
    // The bounds of the hold placed, for the estimate of a call whose usage the vendor leaves out (estimate.ts).
    if (plan.amount !== null && plan.heldTokens) prepared.call.notes.heldTokens = plan.heldTokens;
    return { ...call, plan, hold } as AdmittedCall<P>;
  } finally {
    endTurn?.();
  }
}

/** The call's plan and its hold; a plan refused for money is asked to hold less, once. */
async function planAndHold<P extends HoldPlan>(deps: FrontHalfDeps, call: PreparedRequest, admission: Admission<P>) {
  const admit = (p: P) => (p.amount === null ? null : placeHold(deps, call, p as Extract<HoldPlan, { amount: bigint }>, admission.trace));
  let plan = await admission.planHold(call);
  let hold: Hold | null;
  try {
    hold = await admit(plan);
  } catch (e) {
    // Asked only once refused, so a call that fits pays nothing for it.
    const lowered = refusedForMoney(e) && admission.lowerHold ? await admission.lowerHold(call, e as GatewayError) : null;
    if (!lowered) throw e;
    plan = lowered;
    hold = await admit(plan);
  }
  return { plan, hold };
}

const RESERVATION_REFUSALS = new Set([402, 403, 429]);

/**
 * A call refused before anything was held: why (credits, plan or audience, quota), and which model it asked
 * for when that is a catalog model (a name the client made up never becomes a metric label).
 */
export function noteRefusal(facts: CallFacts, e: unknown, body: unknown, snap: Snapshot): void {
  if (e instanceof GatewayError && RESERVATION_REFUSALS.has(e.status)) facts.refusedStatus = e.status;
  const asked = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).model : undefined;
  const model = typeof asked === 'string' ? snap.catalog.models.get(asked) : undefined;
  if (model) {
    facts.model = model.id;
    facts.vendor = model.vendor;
  }
}

/** Holds the plan's amount; the hold is the admission span of a traced call (402, 403 and 429 are its errors). */
function placeHold(
  deps: FrontHalfDeps,
  { caller, prepared }: PreparedRequest,
  plan: Extract<HoldPlan, { amount: bigint }>,
  trace: CallTrace | null | undefined,
): Promise<Hold> {
  const admit = () => deps.accounts.admit(caller, prepared.call.model, plan.amount, plan.holdId, plan.advice);
  // Untraced (telemetry off, the usual case), the hold is the admission's own promise, not wrapped in another.
  return trace ? admittedInSpan(trace, plan.amount, admit) : admit();
}

async function admittedInSpan(trace: CallTrace, amount: bigint, admit: () => Promise<Hold>): Promise<Hold> {
  const span = trace.step('admission', { [GATEWAY.heldNano]: Number(amount) });
  try {
    const hold = await admit();
    span.end();
    return hold;
  } catch (e) {
    span.end(errorTypeOf(e));
    throw e;
  }
}

function traceRequest({ door, prepared, caller }: PreparedRequest) {
  const { call } = prepared;
  // The client's body is in its door's format (transforms/protocols/<format>/); a door whose every vendor names its
  // own format speaks the vendor's.
  const client = clientFormat(door) ?? prepared.wire;
  const limit = (client.limits.output ?? []).map((f) => call.client[f]).find((v): v is number => typeof v === 'number');
  return {
    model: call.model,
    stream: call.stream,
    maxTokens: limit,
    keyPrefix: caller.keyPrefix,
    walletId: caller.walletId,
    body: call.client,
    formats: { client: client.transcript, vendor: prepared.wire.transcript },
  };
}

/** A model door holds its reservation (engine/calls/hold-size.ts) under the call's id; a free door holds nothing. */
function doorReservation({ door, prepared, snap, now }: PreparedRequest): HoldPlan {
  if (door.billing === 'free') return { amount: null };
  refuseInputPastContext(door, prepared.call, snap);
  const { amount, advice, heldTokens } = holdFor(door, prepared.call, snap, now);
  return { amount, holdId: prepared.call.id, ...(advice ? { advice } : {}), ...(heldTokens ? { heldTokens } : {}) };
}

/**
 * A model door's hold with its default output fitted to what the key's day has left: the daily limit refuses only
 * once the day is used up, so a call leaving the output limit to the gateway would otherwise be held for the
 * model's whole output far past the day. A limit the client sent is held as sent. A day not used up that fits no
 * output token still lets its last call pass (interface.md, Authentication 8), held for its shortest answer: its hold
 * is more than the day leaves, so the calls after it find the day used up.
 */
export function doorReservationWithinDay(accounts: Accounts, clock: Clock) {
  return async (call: PreparedRequest): Promise<HoldPlan> => {
    const plan = doorReservation(call);
    if (plan.amount === null || call.door.billing !== 'tokens') return plan;
    const dayLeft = await accounts.dayLeft(call.caller);
    if (dayLeft === null || plan.amount <= dayLeft || clientSentOutputLimit(call.door, call.prepared.call)) return plan;
    const { door, prepared, snap, now: at, caller } = call;
    const seen: { bound: Room['bound'] } = { bound: { kind: 'day' } };
    const lowered = await lowerOutputToRoom(door, prepared.call, snap, at, async () => {
      const room = await accounts.room(caller, prepared.call.model);
      seen.bound = room.bound;
      return room.nano;
    });
    if (lowered && !('nothingFits' in lowered)) return loweredPlan(lowered, prepared.call.id);
    const { bound } = seen;
    // What leaves too little for one token may be the month or the wallet, not the day: the refusal names it.
    if (lowered && bound.kind !== 'day' && bound.kind !== 'group_day') {
      const refusal = bound.kind === 'wallet' ? errors.insufficientCredit('', null) : errors.keyLimit('', null);
      throw shortestAnswerRefused(refusal, lowered.nothingFits, bound);
    }
    if (dayLeft <= 0n) throw dayLimitError(dayLeft, bound, clock.now());
    const last = lowered ? shortestAnswer(door, prepared.call, snap, at) : null;
    return last ? loweredPlan(last, prepared.call.id) : plan;
  };
}

/** No output token fits what the day leaves: the class's daily limit named when it is the one that binds. */
function dayLimitError(dayLeft: bigint, bound: Room['bound'], now: Date): GatewayError {
  const limit = bound.kind === 'group_day' ? `the daily limit of this key's group '${bound.group}'` : "this key's daily limit";
  return errors.keyLimit(
    `What ${limit} leaves today (${nanoToCreditsFloor(dayLeft)} credits) does not cover this call with even one ` +
      `output token. Send a shorter prompt, or wait until ${nextKoreanMidnight(now).toISOString()} (00:00 Korean time); ` +
      `raising ${bound.kind === 'group_day' ? "the group's" : "the key's"} daily limit lifts it at once.`,
    nextKoreanMidnight(now).getTime() - now.getTime(),
  );
}

/**
 * A model door's call refused for credit or its key's monthly limit while the client left the output limit to
 * the gateway: held again at the largest output limit the caller can hold (affordable-output.ts).
 */
export function doorReservationLowered(accounts: Accounts) {
  return async ({ door, prepared, snap, now, caller }: PreparedRequest, refusal: GatewayError): Promise<HoldPlan | null> => {
    const seen: { bound: Room['bound'] } = { bound: { kind: 'wallet' } };
    const lowered = await lowerOutputToRoom(door, prepared.call, snap, now, async () => {
      const room = await accounts.room(caller, prepared.call.model);
      seen.bound = room.bound;
      return room.nano;
    });
    if (!lowered) return null;
    const { bound } = seen;
    if ('nothingFits' in lowered) {
      // The day refuses no call before it is used up (its last call passes): the wallet's or the month's refusal stands.
      if (bound.kind === 'day' || bound.kind === 'group_day') return null;
      throw shortestAnswerRefused(refusal, lowered.nothingFits, bound);
    }
    return loweredPlan(lowered, prepared.call.id);
  };
}

/** The hold of a call whose output limit the gateway lowered to fit. */
const loweredPlan = (lowered: FittedQuote, holdId: string): HoldPlan => ({
  amount: lowered.amount,
  holdId,
  ...(lowered.advice ? { advice: lowered.advice } : {}),
  ...(lowered.heldTokens ? { heldTokens: lowered.heldTokens } : {}),
  written: lowered.written,
});

/**
 * The refusal, said again for a call whose shortest answer does not fit: an output limit would not help, so the
 * client is not told to lower (or send) one, but what the call needs at least and what is left.
 */
function shortestAnswerRefused(
  refusal: GatewayError,
  { neededNano, availableNano }: NothingFits['nothingFits'],
  bound: Room['bound'],
): GatewayError {
  const { left, remedy } = refusal.type === 'key_limit_exceeded' ? boundWords(bound) : { left: 'the wallet has', remedy: 'top up' };
  return new GatewayError(
    refusal.status,
    refusal.type,
    `Not even the shortest answer fits: this call needs at least ${nanoToCreditsCeil(neededNano)} credits (its input and one ` +
      `output token), and ${left} ${nanoToCreditsFloor(availableNano < 0n ? 0n : availableNano)} credits for it. ` +
      `No output limit would make it fit: ${remedy}, or send a shorter input.` +
      // The refusal said to retry soon when calls in flight hold the rest: what they give back may be enough.
      (refusal.headers['retry-after'] ? ' Calls in progress hold more of it: a retry in a moment may fit.' : '') +
      ' Nothing was charged.',
    { headers: refusal.headers },
  );
}

/** The limit that binds, in words: a class's limit is named as the class's, since the key's own may have room. */
function boundWords(bound: Room['bound']): { left: string; remedy: string } {
  if (bound.kind === 'group_month' || bound.kind === 'group_day') {
    const period = bound.kind === 'group_month' ? 'monthly' : 'daily';
    const reopens = bound.kind === 'group_month' ? 'next month' : 'tomorrow';
    return {
      left: `the ${period} limit of this key's group '${bound.group}' leaves`,
      remedy: `raise the group's ${period} limit (it reopens ${reopens})`,
    };
  }
  if (bound.kind === 'day') return { left: "this key's daily limit leaves", remedy: "raise the key's daily limit (it reopens tomorrow)" };
  return { left: "this key's monthly limit leaves", remedy: "raise the key's monthly limit (it reopens next month)" };
}

export function configuredDoor(snap: Snapshot, name: string): DoorConfig {
  const door = snap.config.doors[name];
  if (!door) throw errors.notFound(`The ${name} door is not configured.`);
  return door;
}
