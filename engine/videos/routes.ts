// The video doors, registered in their own scope because it alone parses multipart/form-data. Content answers with
// a short-lived address rather than the bytes.

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import multipart from '@fastify/multipart';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import {
  admitCall,
  authenticateBeforeBody,
  type BodyReader,
  configuredDoor,
  type FrontHalfDeps,
  noteRefusal,
  type PreparedRequest,
} from '../calls/front-half.ts';
import type { VendorRoutes } from '../calls/vendor-routes.ts';
import type { DoorConfig } from '../catalog/config.ts';
import { errors, GatewayError } from '../core/errors.ts';
import { usdToNano, VIDEO_CALL_PREFIX } from '../core/money.ts';
import { type CallFacts, callFacts } from '../http/call-facts.ts';
import { type FormRules, MULTIPART_PLUGIN_OPTIONS, readMultipartForm } from '../http/multipart.ts';
import { readJsonBody } from '../http/request-body.ts';
import type { Caller } from '../money/accounts.ts';
import type { CallTrace } from '../telemetry/call-trace.ts';
import { errorTypeOf, GATEWAY } from '../telemetry/genai.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import type { VideoFiles } from './files.ts';
import { parseVideoRequest, type VideoRequest, vendorBody } from './request.ts';
import type { VideoJob, VideoStore } from './store.ts';
import { isVisible, signFileToken, verifyFileToken, videoObject } from './view.ts';
import type { VideoWorker } from './worker.ts';

interface VideoRoutesDeps extends FrontHalfDeps {
  store: VideoStore;
  files: VideoFiles;
  worker: VideoWorker;
  /** Lease owner id of this process (it submits the jobs it creates). */
  owner: string;
  urlSecret: () => Promise<string>;
  routes: VendorRoutes;
  telemetry?: Telemetry | null;
}

/** The door name in config/doors.yaml. */
const VIDEO_DOOR = 'videos';
/** How long a download address from /content stays valid. */
const FILE_URL_TTL_SECONDS = 300;
/** The hold outlives the job deadline by this much, so the sweeper never takes it from a live job. */
const HOLD_MARGIN_MS = 10 * 60_000;
const MAX_IDEMPOTENCY_KEY = 255;
/**
 * How long a request refused for money looks for the job its Idempotency-Key's twin is making: that twin's hold
 * can be what refused it, and it inserts its job within a few of its own statements.
 */
const TWIN_LOOKS = 20;
const TWIN_LOOK_EVERY_MS = 50;
const LIST_DEFAULT = 20;
const LIST_MAX = 100;

export function registerVideoRoutes(app: FastifyInstance, deps: VideoRoutesDeps): void {
  // A store this process cannot read is the operator's to fix: one warning says so, not one per download.
  let storeSplitWarned = false;
  const warnOnce = (log: FastifyBaseLogger, fields: object, msg: string) => {
    if (storeSplitWarned) return;
    storeSplitWarned = true;
    log.warn(fields, msg);
  };
  app.register(async (scope) => {
    await scope.register(multipart, MULTIPART_PLUGIN_OPTIONS);
    scope.post('/v1/videos', { onRequest: authenticateBeforeBody(deps, VIDEO_DOOR) }, (req, reply) =>
      create(req, deps).then((o) => reply.send(o)),
    );
    scope.get('/v1/videos', (req) => list(req, deps));
    scope.get<{ Params: { id: string } }>('/v1/videos/:id', async (req) => {
      const { job } = await visibleJob(req, deps);
      return videoObject(job);
    });
    scope.get<{ Params: { id: string }; Querystring: { variant?: string } }>('/v1/videos/:id/content', async (req, reply) => {
      const { job } = await visibleJob(req, deps);
      const variant = req.query.variant;
      if (variant !== undefined && variant !== 'video')
        throw errors.invalidRequest(`variant '${variant}' is not offered; only the video itself is.`, 'variant');
      assertFile(job, deps.clock.now());
      const direct = await deps.files.directUrl(job.fileName!, FILE_URL_TTL_SECONDS);
      if (direct) return reply.code(302).header('location', direct).header('cache-control', 'no-store').send();
      const exp = Math.floor(deps.clock.now().getTime() / 1000) + FILE_URL_TTL_SECONDS;
      const token = signFileToken(await deps.urlSecret(), job.id, exp);
      return reply
        .code(302)
        .header('location', `/v1/videos/${encodeURIComponent(job.id)}/file?token=${token}`)
        .header('cache-control', 'no-store')
        .send();
    });
    scope.get<{ Params: { id: string }; Querystring: { token?: string } }>('/v1/videos/:id/file', async (req, reply) => {
      const now = deps.clock.now();
      const id = req.params.id;
      if (!verifyFileToken(await deps.urlSecret(), id, req.query.token ?? '', Math.floor(now.getTime() / 1000))) {
        throw errors.forbidden('This download address is not valid or has expired. Ask GET /v1/videos/{id}/content for a new one.');
      }
      const job = await deps.store.get(id);
      if (!job || !isVisible(job, now)) throw notFound(id);
      assertFile(job, now);
      const file = await deps.files.open(job.fileName!);
      if (!file) throw await storedElsewhere(job, deps, (fields, msg) => warnOnce(req.log, fields, msg));
      return reply
        .header('content-type', 'video/mp4')
        .header('content-length', String(file.bytes))
        .header('content-disposition', `attachment; filename="${job.id}.mp4"`)
        .header('cache-control', 'private, no-store')
        .send(file.stream);
    });
    scope.delete<{ Params: { id: string } }>('/v1/videos/:id', async (req) => {
      const { job } = await visibleJob(req, deps);
      if (job.status === 'queued' || job.status === 'in_progress') {
        throw errors.conflict(`Video '${job.id}' is ${job.status}; it can be deleted once it is completed or failed.`);
      }
      const now = deps.clock.now();
      if (job.fileName && !job.fileDeletedAt) await deps.files.remove(job.fileName);
      await deps.store.patch(job.id, null, { deletedAt: now, ...(job.fileName && !job.fileDeletedAt ? { fileDeletedAt: now } : {}) });
      return { id: job.id, object: 'video.deleted', deleted: true };
    });
  });
}

/**
 * The job an Idempotency-Key made, as the key's answer; once that job is deleted or past its retention the key
 * answers 404 as GET on the job does (the key stays spent, so a repeat never makes a second job).
 */
function stillVisible(first: VideoJob, now: Date): VideoJob {
  if (isVisible(first, now)) return first;
  throw errors.notFound(
    `The video this Idempotency-Key made ('${first.id}') was deleted or is past its retention; send a new Idempotency-Key for a new video.`,
  );
}

const notFound = (id: string) => errors.notFound(`No video '${id}' (unknown, deleted, past its retention, or made with another wallet).`);

function assertFile(job: VideoJob, now: Date): void {
  if (job.status !== 'completed') {
    throw errors.notFound(
      `Video '${job.id}' has no content: its status is ${job.status}${job.status === 'failed' ? ` (${job.errorCode})` : ''}.`,
    );
  }
  // Expiry is recorded on the job: expires_at passed, and file_deleted_at once a worker's sweep removed the file.
  if (!job.fileName || job.fileDeletedAt || (job.expiresAt && job.expiresAt.getTime() <= now.getTime())) {
    const until = job.expiresAt ? ` (it was kept until ${job.expiresAt.toISOString()})` : '';
    throw errors.notFound(`The file of video '${job.id}' is no longer stored${until}.`);
  }
}

/**
 * Why a file the job records as stored is not in this process's store. Read again first: a sweep or a DELETE may
 * have removed it a moment ago (the true 404). Otherwise another process stored it in a store this one cannot
 * read (data folders of their own, GATEWAY_VIDEO_STORE unset): a setup fault, not expiry, so 503, which leaves the
 * video the client's and lets a retry reach a process that can serve it; `warn` tells the operator (once).
 */
async function storedElsewhere(job: VideoJob, deps: VideoRoutesDeps, warn: (fields: object, msg: string) => void): Promise<GatewayError> {
  const now = deps.clock.now();
  const again = await deps.store.get(job.id);
  if (!again || !isVisible(again, now)) return notFound(job.id);
  try {
    assertFile(again, now);
  } catch (e) {
    return e as GatewayError;
  }
  warn(
    { videoId: job.id, videoStore: deps.files.where },
    "a video recorded as stored is not in this process's video store: every gateway process sharing the database must share one video store (GATEWAY_VIDEO_STORE, or one GATEWAY_DATA_DIR/videos)",
  );
  return errors.unavailable(
    `The file of video '${job.id}' was stored where this gateway process cannot read it. Retry later; ` +
      "the gateway's operator must give every process one shared video store (GATEWAY_VIDEO_STORE).",
  );
}

const doorOf = (deps: VideoRoutesDeps): DoorConfig => configuredDoor(deps.runtime.snapshot(), VIDEO_DOOR);

async function visibleJob(
  req: FastifyRequest<{ Params: { id: string } }>,
  deps: VideoRoutesDeps,
): Promise<{ caller: Caller; job: VideoJob }> {
  const caller = await deps.accounts.authenticate(req.headers, doorOf(deps).key_headers);
  const id = req.params.id;
  const job = await deps.store.get(id);
  if (!job || job.walletId !== caller.walletId || !isVisible(job, deps.clock.now())) throw notFound(id);
  return { caller, job };
}

// ---------- POST /v1/videos ----------

/**
 * A traced job request: its span ends with the answer (the job queued), and the job's submission and settle,
 * later and in the background, join the same trace through `telemetry.jobs`.
 */
async function create(req: FastifyRequest, deps: VideoRoutesDeps): Promise<Record<string, unknown>> {
  // The request's log line and metrics name the door, model and vendor as a model door's do; the charge is the worker's.
  const facts = callFacts(req);
  facts.door = VIDEO_DOOR;
  const trace = deps.telemetry ? deps.telemetry.startCall({ door: VIDEO_DOOR, requestId: req.id, headers: req.headers }) : null;
  try {
    const job = await createJob(req, deps, trace, facts);
    trace?.end({ status: 200 });
    return job;
  } catch (e) {
    noteRefusal(facts, e, req.body, deps.runtime.snapshot());
    trace?.end({ status: e instanceof GatewayError ? e.status : 500, errorType: errorTypeOf(e) });
    throw e;
  } finally {
    facts.markSettled();
  }
}

async function createJob(
  req: FastifyRequest,
  deps: VideoRoutesDeps,
  trace: CallTrace | null,
  facts: CallFacts,
): Promise<Record<string, unknown>> {
  const admitted = await admitCall(req, deps, {
    door: VIDEO_DOOR,
    readBody: readVideoBody,
    planHold: (call) => planJob(call, req, deps),
    lowerHold: (call) => twinsJob(call, req, deps),
    trace,
  });
  const { model } = admitted.prepared.call;
  facts.model = model.id;
  facts.vendor = model.vendor;
  facts.keyPrefix = admitted.caller.keyPrefix;
  if (admitted.hold === null) return videoObject(admitted.plan.first);
  const { snap, now, caller, plan, hold } = admitted;
  const { holdId: id, amount, video, idempotencyKey } = plan;
  try {
    const holdRef = deps.accounts.holdRef(hold);
    const limits = snap.config.limits;
    await deps.accounts.extendHold(holdRef, new Date(now.getTime() + limits.video_deadline_ms + HOLD_MARGIN_MS));
    const wall = Date.now();
    const routesCount = Math.max(1, deps.routes[model.vendor]?.length ?? 1);
    const { job, created } = await deps.store.insert({
      id,
      walletId: caller.walletId,
      keyId: caller.keyId,
      idempotencyKey: idempotencyKey ?? null,
      model: model.id,
      vendor: model.vendor,
      seconds: String(video.duration),
      size: video.size,
      resolution: video.resolution,
      holdRef,
      holdNano: amount,
      vendorRequest: vendorBody(model.id, video),
      createdAt: now,
      deadlineWall: new Date(wall + limits.video_deadline_ms),
      nextPollAt: new Date(wall + limits.video_deadline_ms), // set again once the vendor has the job
      leaseOwner: deps.owner,
      leaseUntil: new Date(wall + (limits.call_timeout_ms[VIDEO_DOOR] ?? 60_000) * routesCount + 30_000),
    });
    if (!created) {
      await deps.accounts.release(hold); // the same key won a race: its first job stands
      return videoObject(stillVisible(job, deps.clock.now()));
    }
    if (trace) {
      trace.set({ [GATEWAY.videoId]: job.id });
      deps.telemetry?.jobs.remember(job.id, trace);
    }
    deps.worker.submitSoon(job);
    return videoObject(job);
  } catch (e) {
    await deps.accounts.release(hold).catch(() => undefined);
    throw e;
  }
}

const readVideoBody: BodyReader = async (req, door, snap) =>
  req.isMultipart()
    ? readMultipartForm(req, door, videoForm(snap.config.limits.file_limit_bytes))
    : readJsonBody(req, 'multipart/form-data');

type JobPlan = { amount: bigint; holdId: string; video: VideoRequest; idempotencyKey?: string } | { amount: null; first: VideoJob };

/**
 * The job's parameters (400 before any hold) and its hold, seconds × the model's price per second; nothing is
 * held when the Idempotency-Key names a job the wallet already made (that job is the answer).
 */
async function planJob(
  { body, files, prepared, snap, caller }: PreparedRequest,
  req: FastifyRequest,
  deps: VideoRoutesDeps,
): Promise<JobPlan> {
  const { model } = prepared.call;
  const video = parseVideoRequest(body, model, snap.config.videos, files?.input_reference);
  const idempotencyKey = headerValue(req.headers['idempotency-key']);
  if (idempotencyKey !== undefined && (idempotencyKey === '' || idempotencyKey.length > MAX_IDEMPOTENCY_KEY)) {
    throw errors.invalidRequest(`The Idempotency-Key header must be 1 to ${MAX_IDEMPOTENCY_KEY} characters.`);
  }
  if (idempotencyKey) {
    const first = await deps.store.byIdempotencyKey(caller.walletId, idempotencyKey);
    if (first) return { amount: null, first: stillVisible(first, deps.clock.now()) };
  }
  const perSecond = model.pricing.video_per_second?.[video.resolution];
  if (perSecond === undefined) throw errors.invalidRequest(`${model.id} has no price for ${video.resolution}.`);
  return {
    amount: BigInt(video.seconds) * usdToNano(perSecond),
    holdId: `${VIDEO_CALL_PREFIX}${randomUUID()}`,
    video,
    ...(idempotencyKey ? { idempotencyKey } : {}),
  };
}

/**
 * A request refused for money (402, or 429 for a monthly limit) whose Idempotency-Key another request is using at
 * the same moment: the other's hold may be what refused this one, so its job, once inserted, is this one's answer
 * too. Looked for a bounded while; with none by then, the refusal stands.
 */
async function twinsJob({ caller }: PreparedRequest, req: FastifyRequest, deps: VideoRoutesDeps): Promise<JobPlan | null> {
  const idempotencyKey = headerValue(req.headers['idempotency-key']);
  if (!idempotencyKey) return null;
  for (let look = 0; look < TWIN_LOOKS; look++) {
    const first = await deps.store.byIdempotencyKey(caller.walletId, idempotencyKey);
    if (first) return { amount: null, first: stillVisible(first, deps.clock.now()) };
    await sleep(TWIN_LOOK_EVERY_MS);
  }
  return null;
}

function headerValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined ? undefined : s.trim();
}

/**
 * A form's values as the JSON body, `input_reference` as an image file (at most `fileLimitBytes`, else 413), a
 * URL, or `input_reference[image_url]`. A value may carry an image as a data URI: room for a whole file in base64.
 */
const videoForm = (fileLimitBytes: number): FormRules => ({
  fileLimitBytes,
  files: ['input_reference'],
  filesOrValues: ['input_reference'],
  valueLimitBytes: Math.ceil((fileLimitBytes * 4) / 3) + 64 * 1024,
  maxParts: 50,
  maxFiles: 2,
});

// ---------- GET /v1/videos ----------

async function list(req: FastifyRequest, deps: VideoRoutesDeps) {
  const caller = await deps.accounts.authenticate(req.headers, doorOf(deps).key_headers);
  const q = req.query as Record<string, string | undefined>;
  let limit = LIST_DEFAULT;
  if (q.limit !== undefined) {
    if (!/^\d+$/.test(q.limit) || Number(q.limit) < 1 || Number(q.limit) > LIST_MAX) {
      throw errors.invalidRequest(`limit must be a whole number from 1 to ${LIST_MAX}.`, 'limit');
    }
    limit = Number(q.limit);
  }
  const order = q.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw errors.invalidRequest("order must be 'asc' or 'desc'.", 'order');
  let afterSeq: bigint | undefined;
  if (q.after !== undefined && q.after !== '') {
    const after = await deps.store.get(q.after);
    if (!after || after.walletId !== caller.walletId) throw errors.invalidRequest(`after: no video '${q.after}' in this wallet.`, 'after');
    afterSeq = after.seq;
  }
  const rows = await deps.store.list(caller.walletId, { limit, afterSeq, order, now: deps.clock.now() });
  const data = rows.slice(0, limit).map(videoObject);
  return {
    object: 'list',
    data,
    has_more: rows.length > limit,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data.at(-1)?.id as string | undefined) ?? null,
  };
}
