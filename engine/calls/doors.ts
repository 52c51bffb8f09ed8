// The model doors of config/doors.yaml, and the catalog and balance doors (GET /v1/models, GET /v1/credits).
// Each model door runs the same chain: the front half (front-half.ts: auth → body → prepare → hold), then the
// exchange with the vendor.

import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.ts';
import { listAllows } from '../core/model-list.ts';
import { nanoToCreditsCeil, nanoToCreditsFloor } from '../core/money.ts';
import { callFacts } from '../http/call-facts.ts';
import type { Caller } from '../money/accounts.ts';
import type { WalletBalance } from '../money/ledger.ts';
import { MAX_TOKENS_HEADER } from './affordable-output.ts';
import { chargeForCall } from './call-charge.ts';
import { type ExchangeInput, exchange } from './exchange.ts';
import { type IdsNotStored, refuseNamesNotStored } from './stored-names.ts';

/** Says what a model rule changed in the request (transforms/steps/model-rules.ts). */
const ADJUSTED_HEADER = 'x-service-adjusted';

import { isOnSale, modelOnSale } from '../catalog/model-lookup.ts';
import { modelRecord } from '../catalog/model-record.ts';
import { errorBodyOf } from '../catalog/wire-format.ts';
import type { ModelEntry } from '../core/types.ts';
import { MULTIPART_PLUGIN_OPTIONS, readMultipartForm } from '../http/multipart.ts';
import { readJsonBody } from '../http/request-body.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import { endCallTrace, startCallTrace } from './call-tracing.ts';
import {
  admitCall,
  authenticateBeforeBody,
  type BodyReader,
  doorReservationLowered,
  doorReservationWithinDay,
  type FrontHalfDeps,
  noteRefusal,
  type PreparedRequest,
} from './front-half.ts';
import type { UpstreamClient } from './upstream.ts';
import type { VendorRoutes } from './vendor-routes.ts';

interface GatewayServices extends FrontHalfDeps {
  routes: VendorRoutes;
  upstream: UpstreamClient;
  /** Which models this caller may call (plan and audience), for GET /v1/models; all when absent. */
  modelsFor?: (caller: Caller) => Promise<(model: ModelEntry) => boolean>;
  /** The caller's wallet as every view shows it (money/spendable.ts spendableOf), for GET /v1/credits. */
  credits?: (walletId: string) => Promise<WalletBalance>;
  /** Traces, when OTEL_EXPORTER_OTLP_ENDPOINT asks for them; null or absent: none made. */
  telemetry?: Telemetry | null;
  /** Which of the ids a body names the caller's wallet did not store (a vendor's stored answers are per wallet). */
  idsNotStored: IdsNotStored;
}

/** Registers every model door on the app (engine/http/app.ts), then /v1/models and /v1/credits. */
export function registerModelDoors(app: FastifyInstance, services: GatewayServices): void {
  const holds = modelDoorHolds(services);
  for (const door of Object.values(services.runtime.snapshot().config.doors)) {
    const onRequest = authenticateBeforeBody(services, door.name);
    if (door.body === 'json') {
      app.post(door.path, { config: { errorBody: errorBodyOf(door) }, onRequest }, (req, reply) =>
        serveModelDoor(door.name, req, reply, services, jsonBody, holds),
      );
    } else if (door.body === 'multipart') {
      // The multipart parser lives in its own scope, so the JSON doors never accept a form.
      app.register(async (scope) => {
        await scope.register(multipart, MULTIPART_PLUGIN_OPTIONS);
        scope.post(door.path, { config: { errorBody: errorBodyOf(door) }, onRequest }, (req, reply) =>
          serveModelDoor(door.name, req, reply, services, multipartBody, holds),
        );
      });
    }
    // json-or-multipart doors (videos) are served by their own plugin.
  }
  app.get('/v1/models', (req, reply) => listModels(req, reply, services));
  app.get<{ Params: { id: string } }>('/v1/models/:id', (req, reply) => retrieveModel(req.params.id, req, reply, services));
  app.get('/v1/credits', async (req) => {
    const caller = await services.accounts.authenticate(req.headers);
    if (!services.credits) throw errors.unavailable('Credits are not available.');
    return creditsBody(await services.credits(caller.walletId));
  });
}

/** GET /v1/credits: what the whole wallet can still spend, in credits (rounded down); each lot with its expiry. */
const creditsBody = (b: WalletBalance) => ({
  object: 'credits',
  wallet_id: b.walletId,
  credits: Number(nanoToCreditsFloor(b.availableNano)),
  reserved_credits: Number(nanoToCreditsCeil(b.reservedNano)),
  lots: b.lots
    .filter((l) => l.availableNano > 0n)
    .map((l) => ({
      id: l.id,
      label: l.label,
      vendors: l.vendors,
      credits: Number(nanoToCreditsFloor(l.availableNano)),
      expires_at: l.expiresAt?.toISOString() ?? null,
    })),
});

const jsonBody: BodyReader = async (req) => readJsonBody(req);

/** The whole form is read (files up to limits.file_limit_bytes, else 413) before any reservation. */
const multipartBody: BodyReader = (req, door, snap) =>
  readMultipartForm(req, door, { fileLimitBytes: snap.config.limits.file_limit_bytes });

/** How every model door holds money for a call: the same for each call, so made once. */
function modelDoorHolds(s: GatewayServices) {
  const withinDay = doorReservationWithinDay(s.accounts, s.clock);
  return {
    planHold: async (call: PreparedRequest) => {
      await refuseNamesNotStored(call.prepared.wire, call.prepared.call.body, call.caller.walletId, s.idsNotStored);
      return withinDay(call);
    },
    lowerHold: doorReservationLowered(s.accounts),
  };
}

async function serveModelDoor(
  doorName: string,
  req: FastifyRequest,
  reply: FastifyReply,
  s: GatewayServices,
  readBody: BodyReader,
  holds: ReturnType<typeof modelDoorHolds>,
) {
  const facts = callFacts(req);
  facts.door = doorName;
  const trace = startCallTrace(s.telemetry, req, doorName, facts);
  const admission = { door: doorName, readBody, planHold: holds.planHold, lowerHold: holds.lowerHold, trace };
  const { snap, door, now, caller, prepared, hold, plan } = await admitCall(req, s, admission).catch((e: unknown) => {
    noteRefusal(facts, e, req.body, s.runtime.snapshot());
    facts.markSettled();
    endCallTrace(trace, facts, reply, e);
    throw e;
  });
  // Set on the raw response so a stream's head carries it too.
  if (plan.amount !== null && plan.written) reply.raw.setHeader(MAX_TOKENS_HEADER, String(plan.written.value));
  if (prepared.call.notes.adjusted?.length) reply.raw.setHeader(ADJUSTED_HEADER, prepared.call.notes.adjusted.join(', '));
  facts.model = prepared.call.model.id;
  facts.vendor = prepared.call.model.vendor;
  facts.keyPrefix = caller.keyPrefix;
  // From here on money is held: whatever happens, even a fault building the vendor's request, ends in this
  // one `finally`, which charges what the vendor's usage says or releases the hold before any error is answered.
  const charge = chargeForCall({
    accounts: s.accounts,
    log: req.log,
    snap,
    caller,
    hold,
    model: prepared.call.model,
    door: doorName,
    requestId: req.id,
    at: now,
    now: () => s.clock.now(),
    elapsedMs: () => reply.elapsedTime,
    facts,
    trace,
  });
  let failure: unknown;
  try {
    const { call } = prepared;
    const input: ExchangeInput = {
      prepared,
      door,
      vendor: snap.config.vendors[call.model.vendor]!, // model-checks: a model's vendor is one of config/vendors.yaml's
      routes: s.routes[call.model.vendor] ?? [],
      clientHeaders: req.headers,
      timeoutMs: snap.config.limits.call_timeout_ms[door.name] ?? 300_000,
      streamStallMs: snap.config.limits.stream_stall_ms,
      streamOpeningHoldMs: snap.config.limits.stream_opening_hold_ms,
      retryAfterMaxMs: snap.config.limits.retry_after_max_ms,
      reply,
      facts,
      trace,
    };
    await exchange(input, { upstream: s.upstream, log: req.log }, charge);
  } catch (e) {
    failure = e;
    throw e;
  } finally {
    facts.chargedNano = await charge.finish();
    facts.markSettled();
    endCallTrace(trace, facts, reply, failure);
  }
  return reply;
}

/** One model as the list shows it (the SDKs' `models.retrieve`): a model this key may not call is not found, as the list leaves it out. */
async function retrieveModel(id: string, req: FastifyRequest, reply: FastifyReply, s: GatewayServices) {
  const caller = await s.accounts.authenticate(req.headers);
  const snap = s.runtime.snapshot();
  const now = s.clock.now();
  const model = modelOnSale(snap.catalog, id, now);
  const mayCall = await modelsOf(caller, s);
  if (!mayCall(model))
    throw errors.modelNotFound(`The model '${id}' is not available to this key. GET /v1/models lists the models it may call.`);
  return reply.send(modelRecord(model, snap.config, now));
}

/** What the caller may call: its credits and audience (modelsFor), and on top its key's own list of models. */
async function modelsOf(caller: Caller, s: GatewayServices): Promise<(model: ModelEntry) => boolean> {
  const byWallet = s.modelsFor ? await s.modelsFor(caller) : () => true;
  return (m) => listAllows(caller.models, m.id) && byWallet(m);
}

async function listModels(req: FastifyRequest, reply: FastifyReply, s: GatewayServices) {
  const caller = await s.accounts.authenticate(req.headers);
  const mayCall = await modelsOf(caller, s);
  const snap = s.runtime.snapshot();
  const now = s.clock.now();
  const data = [...snap.catalog.models.values()].filter((m) => isOnSale(m, now) && mayCall(m)).map((m) => modelRecord(m, snap.config, now));
  return reply.send({ object: 'list', data });
}
