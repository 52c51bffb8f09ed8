// One call's trip to the vendor and back: the routes in order (route-loop.ts), the answer or stream
// translation, and the usage recorded on the call's charge. The charge is the door's: it settles
// or releases the hold in one `finally` around the whole exchange, so no path leaves money held.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { estimateAnswerUsage, estimateUnreadable } from '../../transforms/util/estimate.ts';
import { tryParse } from '../../transforms/util/json.ts';
import type { DoorConfig, VendorConfig } from '../catalog/config.ts';
import { errorBodyOf } from '../catalog/wire-format.ts';
import { errors, GatewayError, vendorErrorType } from '../core/errors.ts';
import { emptyUsage, isJsonObject, type JsonObject, type Usage } from '../core/types.ts';
import type { CallFacts } from '../http/call-facts.ts';
import { encodeMultipart } from '../http/multipart.ts';
import { sendError } from '../http/reply-error.ts';
import type { CallTrace } from '../telemetry/call-trace.ts';
import { relayBinary } from './binary-relay.ts';
import type { CallCharge } from './call-charge.ts';
import { CallAbort, type CallSignal } from './call-signal.ts';
import { startDeadline } from './deadline.ts';
import type { PreparedCall } from './prepare.ts';
import { type RouteStep, tryRoutes } from './route-loop.ts';
import { relayStream } from './stream-relay.ts';
import { answerHeader, RouteFailure, type UpstreamAnswer, type UpstreamClient, type UpstreamRequest } from './upstream.ts';
import { type Route, urlsVar } from './vendor-routes.ts';

const FALLBACK_DEPTH_HEADER = 'x-gateway-fallback-depth';
const CHARGED_HEADER = 'x-service-charged-nano';
const CHARACTERS_HEADER = 'x-service-characters';

interface ExchangeDeps {
  upstream: UpstreamClient;
  log: FastifyBaseLogger;
}

export interface ExchangeInput {
  prepared: PreparedCall;
  door: DoorConfig;
  vendor: VendorConfig;
  routes: Route[];
  clientHeaders: Record<string, string | string[] | undefined>;
  timeoutMs: number;
  /** How long a streaming client may leave its buffer full before it is treated as gone. */
  streamStallMs: number;
  /** How long a stream's opening events wait for its first content, so a failure right after them falls back. */
  streamOpeningHoldMs: number;
  /** Longest Retry-After waited for before one more pass over the routes. */
  retryAfterMaxMs: number;
  reply: FastifyReply;
  /** Where the call's route, fallbacks and first byte are noted for its log line and the metrics. */
  facts?: CallFacts;
  /** The call's trace, when telemetry is on. */
  trace?: CallTrace | null;
}

/** A route by name (`a0`, `b1`), as logs and metrics show it: never its URL, which may carry credentials. */
const routeName = (route: Route) => `${route.vendor}${route.index}`;

/**
 * Runs the call and answers the client, recording the usage to charge on `charge`. An error the client can
 * still be told is thrown, for the door's error handler to answer once the door's `finally` released the hold.
 */
export async function exchange(input: ExchangeInput, deps: ExchangeDeps, charge: CallCharge): Promise<void> {
  const { reply, prepared } = input;
  const clientGone = new CallAbort();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) clientGone.abort();
  });
  // A client that left while its call waited to be admitted is not served: the vendor has done nothing yet,
  // and nothing is owed (the door's `finally` gives the hold back).
  if (reply.raw.destroyed) return;
  // A client that leaves later does not stop the call, a stream no more than a whole answer: the vendor
  // finishes and bills its work either way, so the call runs to its end (within its time limit) and is settled
  // from the vendor's usage, even with nobody left to read it. Leaving early is never cheaper than staying.
  const request = upstreamRequest(input);
  const deadline = startDeadline(input.timeoutMs); // after anything that may throw before the `finally` that ends it
  try {
    const outcome = await tryRoutes(input.routes, {
      send: (route, attemptSignal, traceHeaders) => {
        input.facts?.failedRoutes.push(routeName(route));
        return deps.upstream.send(route, input.vendor, request, attemptSignal, traceHeaders);
      },
      read: async (answer, route, depth) => {
        // Noted before relaying: a non-streaming answer settles (and writes its usage record) inside relay.
        noteRoute(input.facts, routeName(route), depth);
        const step = await relay(answer, depth, input, deps, charge, { clientGone, callEnds: deadline.signal });
        // The route that answered did not fail; only those tried before it did.
        if (step.done) input.facts?.failedRoutes.pop();
        else noteRoute(input.facts, undefined, undefined);
        return step;
      },
      log: deps.log,
      signal: deadline.signal,
      clientGone,
      retryAfterMaxMs: input.retryAfterMaxMs,
      trace: input.trace,
    });
    if (outcome.done) return;
    const refused = outcome.credentialRefused?.[0];
    if (refused) {
      if (input.facts) input.facts.credentialRefused = refused.route.vendor;
      throw errors.vendorCredentialRefused(refused.route.vendor, refused.status);
    }
    throw errors.upstream(
      input.routes.length === 0
        ? noRouteMessage(prepared.call.model.vendor)
        : `Vendor ${prepared.call.model.vendor.toUpperCase()} failed on every route (${input.routes.length}). Retry later.`,
      outcome.retryAfterMs,
    );
  } catch (e) {
    if (reply.raw.headersSent || clientGone.aborted) {
      // Nothing more can be said to this client: end what it was sent.
      if (!reply.raw.writableEnded) reply.raw.end();
      return;
    }
    if (deadline.passed) throw errors.upstream(`The vendor did not answer within ${Number((input.timeoutMs / 1000).toFixed(1))} seconds.`);
    throw e instanceof GatewayError ? e : errors.upstream((e as Error).message);
  } finally {
    deadline.end();
  }
}

/** The route answering the call and how many failed before it, on the call's facts (undefined: none answers yet). */
function noteRoute(facts: CallFacts | undefined, route: string | undefined, depth: number | undefined): void {
  if (!facts) return;
  facts.route = route;
  facts.fallbackDepth = depth;
}

/**
 * A vendor with no route: neither its GATEWAY_VENDOR_<X>_URLS nor the bundled simulator (off once some vendor's
 * URLs are set). The client is told it is the operator's setting, and which one, rather than to retry.
 */
function noRouteMessage(vendor: string): string {
  const v = vendor.toUpperCase();
  return `No route is configured for vendor ${v}: the gateway's operator must set ${urlsVar(vendor)} and restart (the bundled simulator is off for vendor ${v}).`;
}

const DONE: RouteStep<void> = { done: true, value: undefined };

/**
 * The answer of one route, relayed to the client (done), or a reason the next route should be asked. Each kind
 * of answer's relay is the step's own promise, not awaited in another.
 */
function relay(
  answer: UpstreamAnswer,
  depth: number,
  input: ExchangeInput,
  deps: ExchangeDeps,
  charge: CallCharge,
  signals: { clientGone: CallSignal; callEnds: CallSignal },
): Promise<RouteStep<void>> {
  if (answer.status >= 400) return relayVendorError(answer, depth, input);
  if (input.door.answer_body === 'binary') {
    const usage = input.prepared.call.notes.fixedUsage ?? emptyUsage();
    const headers = {
      [FALLBACK_DEPTH_HEADER]: String(depth),
      [CHARGED_HEADER]: String(charge.quote(usage)),
      [CHARACTERS_HEADER]: String(usage.characters ?? 0),
    };
    return relayBinary(answer, { reply: input.reply, headers, usage, stallMs: input.streamStallMs, log: deps.log, ...signals }, charge);
  }
  if (!input.prepared.call.stream) return relayAnswer(answer, depth, input, charge);
  const { prepared, reply, door } = input;
  const headers = { [FALLBACK_DEPTH_HEADER]: String(depth) };
  return relayStream(
    answer,
    {
      prepared,
      doorPath: door.path,
      reply,
      ...signals,
      stallMs: input.streamStallMs,
      openingHoldMs: input.streamOpeningHoldMs,
      headers,
      errorBody: errorBodyOf(input.door),
      log: deps.log,
      onFirstByte: () => {
        if (input.facts) input.facts.firstByteAt = process.hrtime.bigint();
        input.trace?.firstChunk();
      },
      trace: input.trace,
    },
    charge,
  );
}

function upstreamRequest(input: ExchangeInput): UpstreamRequest {
  // Read, not copied: the upstream client copies them once per attempt, with the route's credential.
  let headers: Record<string, string> = input.prepared.call.upstreamHeaders;
  // Only a client speaking the vendor's own protocol picks its version and betas; elsewhere the gateway does.
  const forwarded = input.prepared.protocol.forwardsClientHeaders ? input.vendor.forward_headers : [];
  for (const name of forwarded) {
    const v = input.clientHeaders[name];
    if (typeof v !== 'string') continue;
    if (headers === input.prepared.call.upstreamHeaders) headers = { ...headers };
    headers[name] = v;
  }
  const { call } = input.prepared;
  // A call that carries files (a multipart door) goes out as multipart, built once for every route.
  const encoded = call.files ? encodeMultipart(call) : { body: JSON.stringify(call.body), contentType: 'application/json' };
  return { path: input.prepared.protocol.upstream, ...encoded, headers };
}

async function relayAnswer(answer: UpstreamAnswer, depth: number, input: ExchangeInput, charge: CallCharge): Promise<RouteStep<void>> {
  const { protocol, call } = input.prepared;
  let raw: string;
  try {
    raw = await answer.body.text();
  } catch (e) {
    // The head came and the body broke off: nothing has reached the client, so the next route may still answer.
    throw new RouteFailure(`the vendor's answer broke off after its head (${(e as Error).message})`, answer.status);
  }
  let json: JsonObject;
  try {
    json = JSON.parse(raw) as JsonObject;
  } catch {
    throw new RouteFailure('the vendor answered with a body that is not JSON', answer.status);
  }
  // `null`, a number or a list: no format answers with one, and each reads its answer's fields.
  if (!isJsonObject(json)) throw new RouteFailure('the vendor answered with JSON that is not an object', answer.status);
  const unusable = protocol.check?.run(json) ?? null;
  if (unusable !== null) throw new RouteFailure(unusable, answer.status);
  // Charged only once the answer is one the client can use: a vendor answer we cannot translate is ours to absorb.
  const out = protocol.answer ? protocol.answer.run(json, call) : null;
  input.trace?.answered(json);
  charge.record(answerUsage(json, input.prepared));
  charge.stores(input.prepared.wire.stored?.answerOf(json) ?? null);
  const charged = await charge.finish();
  const reply = input.reply.header(FALLBACK_DEPTH_HEADER, String(depth)).header(CHARGED_HEADER, String(charged)).code(200);
  // Passed through, the vendor's own bytes go out: nothing to serialize again, and numbers past 2^53 stay as sent.
  if (out === null) reply.type('application/json; charset=utf-8').send(raw);
  else reply.send(out);
  return DONE;
}

/** The vendor's usage figure; what it left out or reported unreadably is estimated, never free. */
function answerUsage(answer: JsonObject, prepared: PreparedCall): Usage {
  const reader = prepared.protocol.usage;
  if (!reader) return emptyUsage();
  const { call } = prepared;
  return estimateUnreadable(
    reader.run(answer),
    () => estimateAnswerUsage(call.body, answer, call.model.vendor, call.settings.images),
    call.notes.heldTokens,
  );
}

/**
 * A vendor's 4xx is the client's answer: unchanged when the shapes match, re-shaped otherwise, its type one the
 * client contract names. The depth header names the route that answered (a 400 after a 429 on the first is depth 1).
 */
async function relayVendorError(answer: UpstreamAnswer, depth: number, input: ExchangeInput): Promise<RouteStep<void>> {
  const raw = await answer.body.text();
  const vendorErrors = input.prepared.wire.errors;
  const reply = input.reply.header(FALLBACK_DEPTH_HEADER, String(depth));
  const body = errorBodyOf(input.door);
  if (vendorErrors.body === body) {
    reply
      .code(answer.status)
      .header('content-type', answerHeader(answer, 'content-type') ?? 'application/json')
      .send(raw);
    return DONE;
  }
  const { type, message } = vendorErrors.read(tryParse(raw));
  const err = new GatewayError(answer.status, vendorErrorType(type, vendorErrors.types, answer.status), message ?? raw.slice(0, 500));
  sendError(reply, err, body);
  return DONE;
}
