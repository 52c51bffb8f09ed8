// The video worker: submits jobs to vendor D, polls them, stores finished videos and settles or releases each hold
// once. A job is worked only by the process holding its lease, and money moves before the job row is written: the
// ledger's finishes are idempotent, so a process dying between the two is repaired by the next claimer.

import { tryRoutes } from '../calls/route-loop.ts';
import { routeCredential, type UpstreamClient } from '../calls/upstream.ts';
import type { Route, VendorRoutes } from '../calls/vendor-routes.ts';
import type { VendorConfig } from '../catalog/config.ts';
import type { Runtime } from '../catalog/runtime.ts';
import { wireFor } from '../catalog/wire-format.ts';
import type { Clock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { JobRunner } from '../core/job-runner.ts';
import type { VendorId } from '../core/types.ts';
import type { Accounts } from '../money/accounts.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import { usageRecordRows } from '../usage/records.ts';
import { DOWNLOAD_TIMEOUT_MS, downloadVideo, StoreRefused } from './download.ts';
import type { VideoFiles } from './files.ts';
import { type FinishedVideo, finishedVideo } from './finished-video.ts';
import { jobUsageRecord } from './job-record.ts';
import { endJobSettleSpan, jobSettleSpan } from './job-tracing.ts';
import type { VideoJob, VideoPatch, VideoStore } from './store.ts';
import {
  clampProgress,
  deliveredCost,
  failureOf,
  type Outcome,
  readVendorAnswer,
  type VendorStatus,
  vendorFailed,
} from './vendor-answers.ts';

export interface WorkerLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface VideoWorkerDeps {
  store: VideoStore;
  files: VideoFiles;
  accounts: Accounts;
  runtime: Runtime;
  routes: VendorRoutes;
  upstream: UpstreamClient;
  clock: Clock;
  /** How often due jobs are polled at the vendor (GATEWAY_VIDEO_POLL_MS). */
  pollMs: number;
  /** This process's lease owner id. */
  owner: string;
  log?: WorkerLog;
  /** Traces, when telemetry is on: the job's create attempts and its settle join its request's trace. */
  telemetry?: Telemetry | null;
  onFinished?: ((finished: FinishedVideo) => void) | undefined; // once per job, by the process whose write finished it (video.finished)
}

/** Jobs claimed per round; a round that claims this many is followed by another at once. */
const CLAIM_BATCH = 16;
/** How long a claimed job stays ours while one status call (not a download) runs. */
const POLL_LEASE_MS = 2 * 60_000;
const FILE_SWEEP_EVERY_MS = 60_000;

/** A job's vendor as the running config has it: how to call it, on which routes, and where a job is created. */
interface JobVendor {
  config: VendorConfig;
  routes: Route[];
  createPath: string;
}

const silent: WorkerLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

export class VideoWorker {
  private readonly runner: JobRunner;
  private readonly inFlight = new Set<Promise<unknown>>();
  private lastFileSweep = 0;
  private log: WorkerLog;

  constructor(private readonly deps: VideoWorkerDeps) {
    this.log = deps.log ?? silent;
    this.runner = new JobRunner({
      round: (limit) => this.round(limit),
      batch: CLAIM_BATCH,
      intervalMs: deps.pollMs,
      log: () => this.log,
      failure: 'video worker round failed',
    });
  }

  /** Starts the polling loop. */
  start(log?: WorkerLog): void {
    if (log) this.log = log;
    this.runner.start();
  }

  /** Stops the loop and waits for work in flight (submissions, polls, downloads). */
  async stop(): Promise<void> {
    await this.runner.stop();
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** Submits a job this process just created (it holds the job's lease); runs in the background. */
  submitSoon(job: VideoJob): void {
    this.track(this.submit(job).catch((e) => this.log.error({ err: e, video: job.id }, 'video submission failed')));
  }

  /** One round: claims at most `limit` due jobs, works on each, and now and then deletes expired files. */
  private async round(limit: number): Promise<number> {
    const wall = new Date();
    const claimed = await this.deps.store.claim(this.deps.owner, wall, new Date(wall.getTime() + POLL_LEASE_MS), limit);
    await Promise.all(claimed.map((job) => this.track(this.work(job).catch((e) => this.onWorkError(job, e)))));
    if (wall.getTime() - this.lastFileSweep >= FILE_SWEEP_EVERY_MS) {
      this.lastFileSweep = wall.getTime();
      await this.sweepFiles();
    }
    return claimed.length;
  }

  /** Deletes delivered files whose expires_at (gateway clock) passed. Returns how many. */
  async sweepFiles(): Promise<number> {
    let n = 0;
    for (;;) {
      const due = await this.deps.store.expiredFiles(this.deps.clock.now(), 100);
      for (const f of due) {
        await this.deps.files.remove(f.fileName);
        await this.deps.store.patch(f.id, null, { fileDeletedAt: this.deps.clock.now() });
        n++;
      }
      if (due.length < 100) return n;
    }
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p)).catch(() => undefined);
    return p;
  }

  private async onWorkError(job: VideoJob, e: unknown): Promise<void> {
    this.log.error({ err: e, video: job.id }, 'video job round failed; retried at the next poll');
    await this.deps.store
      .patch(job.id, this.deps.owner, { leaseOwner: null, leaseUntil: null, nextPollAt: this.nextPoll() })
      .catch(() => undefined);
  }

  private nextPoll(): Date {
    return new Date(Date.now() + this.deps.pollMs);
  }

  private limits() {
    return this.deps.runtime.snapshot().config.limits;
  }

  /**
   * The job's vendor as the config loaded now has it. A call to the vendor made the job, but a reload since may
   * have dropped it from config/vendors.yaml: then it is undefined, and the job is one whose vendor has no route.
   */
  private vendorOf(job: VideoJob): JobVendor | undefined {
    const snap = this.deps.runtime.snapshot();
    const vendor = job.vendor as VendorId;
    const config = snap.config.vendors[vendor];
    if (!config) return undefined;
    const door = snap.config.doors.videos;
    const createPath = (door && wireFor(door, vendor)?.chain.upstream) || '/v1/videos/generations';
    return { config, routes: this.deps.routes[vendor] ?? [], createPath };
  }

  private timeoutMs(): number {
    return this.limits().call_timeout_ms.videos ?? 60_000;
  }

  /** Past the deadline by the gateway clock or by wall time (a test clock may stand still). */
  private pastDeadline(job: VideoJob): boolean {
    const byClock = this.deps.clock.now().getTime() - job.createdAt.getTime() >= this.limits().video_deadline_ms;
    return byClock || Date.now() >= job.deadlineWall.getTime();
  }

  private async work(job: VideoJob): Promise<void> {
    if (job.requestId === null) {
      // Its submitter's lease ran out before the vendor's answer was recorded: whether the vendor has the job
      // is unknown, so it is not sent again (that could make two) and nothing is charged.
      await this.finish(job, vendorFailed('The job was not confirmed by the vendor.'));
      return;
    }
    await this.poll(job, job.requestId);
  }

  // ---------- submission ----------

  private async submit(job: VideoJob): Promise<void> {
    const target = this.vendorOf(job);
    if (!target) return this.finish(job, vendorFailed(`Vendor ${job.vendor.toUpperCase()} is no longer configured on the gateway.`));
    const { config, routes, createPath } = target;
    const request = { path: createPath, body: JSON.stringify(job.vendorRequest ?? {}), contentType: 'application/json', headers: {} };
    const outcome = await tryRoutes<{ refused: string } | { requestId: string; routeIndex: number }>(routes, {
      ...this.routeLoop(job, 'create'),
      sendsOnce: true,
      trace: this.deps.telemetry?.jobs.of(job.id),
      send: (route, signal, traceHeaders) => this.deps.upstream.send(route, config, request, signal, traceHeaders),
      read: async (answer, route) => {
        const read = await readVendorAnswer<{ request_id?: unknown }>(answer);
        if (!read.ok) return { done: true, value: { refused: read.message } };
        const requestId = read.json?.request_id;
        if (typeof requestId !== 'string' || requestId === '')
          return { done: false, problem: `route ${route.index} answered without a request_id` };
        return { done: true, value: { requestId, routeIndex: route.index } };
      },
    });
    if (!outcome.done) {
      const refused = outcome.credentialRefused?.[0];
      if (refused) return this.finish(job, vendorFailed(errors.vendorCredentialRefused(refused.route.vendor, refused.status).message));
      const problem = outcome.lastProblem ?? `no route is configured for vendor ${job.vendor}`;
      return this.finish(job, vendorFailed(`Vendor ${job.vendor.toUpperCase()} failed on every route (${problem}).`));
    }
    if ('refused' in outcome.value) {
      this.log.warn({ video: job.id, vendor: job.vendor }, 'video create refused by the vendor');
      return this.finish(job, vendorFailed(`The vendor refused the job: ${outcome.value.refused}`));
    }
    const { requestId, routeIndex } = outcome.value;
    const patch: VideoPatch = {
      requestId,
      routeIndex,
      vendorRequest: null,
      leaseOwner: null,
      leaseUntil: null,
      nextPollAt: this.nextPoll(),
    };
    if (!(await this.deps.store.patch(job.id, this.deps.owner, patch))) {
      this.log.warn({ video: job.id, vendor: job.vendor, route: routeIndex }, 'video create: lease lost before the vendor id was recorded');
    }
  }

  /**
   * The worker's calls make one pass over the routes, each attempt within the videos time limit. No second pass
   * on Retry-After: a status call is asked again at the next poll anyway, and a create's lease covers one pass.
   */
  private routeLoop(job: VideoJob, step: 'create' | 'status') {
    return { log: this.log, logContext: { video: job.id, step }, attemptTimeoutMs: this.timeoutMs() };
  }

  // ---------- polling ----------

  /** Routes in the order to ask: the one that took the job first. */
  private pollOrder(job: VideoJob, routes: Route[]): Route[] {
    const first = routes.find((r) => r.index === job.routeIndex);
    return first ? [first, ...routes.filter((r) => r !== first)] : routes;
  }

  private async poll(job: VideoJob, requestId: string): Promise<void> {
    const target = this.vendorOf(job);
    // A vendor no longer configured is not asked: the job waits for it as for one that does not answer.
    const answered = target ? await this.askStatus(job, requestId, target) : null;
    if (answered && 'lost' in answered) return this.finish(job, vendorFailed(`The vendor lost the job: ${answered.lost}`));
    const status = answered?.status ?? null;

    if (status?.status === 'done') return this.deliver(job, status);
    if (status?.status === 'failed') return this.finish(job, failureOf(status));
    if (this.pastDeadline(job)) {
      const mins = Math.round(this.limits().video_deadline_ms / 60_000);
      return this.finish(job, {
        status: 'failed',
        code: 'timed_out',
        message: `The video was not finished within ${mins} minutes.`,
        costNano: 0n,
      });
    }
    const patch: VideoPatch = { leaseOwner: null, leaseUntil: null, nextPollAt: this.nextPoll() };
    // Statuses only move forward (queued → in_progress), whatever order the vendor's answers arrive in.
    if (status?.status === 'pending' && job.status === 'queued')
      Object.assign(patch, { progress: Math.max(job.progress, clampProgress(status.progress, 0)) });
    if (status?.status === 'in_progress') {
      Object.assign(patch, { status: 'in_progress', progress: Math.max(job.progress, clampProgress(status.progress, job.progress)) });
    }
    await this.deps.store.patch(job.id, this.deps.owner, patch);
  }

  /** The vendor's status of the job, from the route that took it first, then the others; null when none answered. */
  private async askStatus(job: VideoJob, requestId: string, { config, routes }: JobVendor) {
    const path = `/v1/videos/${encodeURIComponent(requestId)}`;
    const outcome = await tryRoutes<{ lost: string } | { status: VendorStatus }>(this.pollOrder(job, routes), {
      ...this.routeLoop(job, 'status'),
      send: (route, signal) => this.deps.upstream.get(route, config, path, signal),
      read: async (answer, route) => {
        const read = await readVendorAnswer<VendorStatus>(answer);
        if (!read.ok) return { done: true, value: { lost: read.message } };
        const status = read.json;
        return status
          ? { done: true, value: { status } }
          : { done: false, problem: `route ${route.index} answered a status that is not a JSON object` };
      },
    });
    return outcome.done ? outcome.value : null;
  }

  // ---------- delivery ----------

  private async deliver(job: VideoJob, status: VendorStatus): Promise<void> {
    const url = typeof status.video?.url === 'string' ? status.video.url : '';
    const duration = Number(status.video?.duration);
    const usageSeconds = Number.isFinite(duration) && duration > 0 ? Math.max(1, Math.round(duration)) : Number(job.seconds);
    const costNano = deliveredCost(status, { nano: job.holdNano, seconds: Number(job.seconds) }, usageSeconds);
    // The download may take a while: keep the job ours for it.
    await this.deps.store.patch(job.id, this.deps.owner, { leaseUntil: new Date(Date.now() + DOWNLOAD_TIMEOUT_MS + POLL_LEASE_MS) });
    let file: { name: string; bytes: number };
    try {
      file = await this.download(job, url);
    } catch (e) {
      return this.deliveryFailed(job, e, usageSeconds);
    }
    // Charged only once the file is stored: a store that is down ends as `undelivered`, nothing charged.
    await this.finish(job, { status: 'completed', costNano, usageSeconds, file });
  }

  private async deliveryFailed(job: VideoJob, e: unknown, usageSeconds: number): Promise<void> {
    const attempts = job.deliverAttempts + 1;
    const stored = e instanceof StoreRefused;
    const reason = stored ? ((e.cause as Error)?.message ?? String(e.cause)) : (e as Error).message;
    this.log.warn(
      { video: job.id, attempt: attempts, reason, store: stored ? this.deps.files.where : undefined },
      stored ? 'video store refused a video' : 'video download failed',
    );
    if (attempts >= this.deps.runtime.snapshot().config.videos.deliver_attempts) {
      // The store's own error stays in the log: the client is told what failed, not the operator's addresses.
      const message = stored
        ? 'The finished video could not be stored by the gateway.'
        : `The finished video could not be fetched from the vendor (${reason}).`;
      await this.finish(job, { status: 'failed', code: 'undelivered', message, costNano: 0n, usageSeconds });
      return;
    }
    await this.deps.store.patch(job.id, this.deps.owner, {
      deliverAttempts: attempts,
      leaseOwner: null,
      leaseUntil: null,
      nextPollAt: this.nextPoll(),
    });
  }

  private download(job: VideoJob, url: string): Promise<{ name: string; bytes: number }> {
    const target = this.vendorOf(job);
    // The vendor's credential goes only to the vendor's own hosts, never to a third-party file host.
    const credentialFor = (origin: string) => {
      const route = target?.routes.find((r) => new URL(r.baseUrl).origin === origin);
      return route && target ? routeCredential(target.config, route) : {};
    };
    return downloadVideo(this.deps.files, job.id, url, credentialFor);
  }

  // ---------- the end of a job ----------

  /** Moves the money (settle the charge, or release the hold), then writes the outcome under our lease. */
  private async finish(job: VideoJob, o: Outcome): Promise<void> {
    const { accounts, clock, store } = this.deps;
    const span = jobSettleSpan(this.deps.telemetry, job, o);
    let charged = 0n;
    if (o.costNano > 0n)
      charged = await accounts.chargeDetached(
        job.holdRef,
        job.keyId,
        o.costNano,
        usageRecordRows(jobUsageRecord(job, o, this.deps.clock.now(), this.deps.telemetry?.jobs.of(job.id)?.traceId ?? null)),
      );
    else await accounts.releaseDetached(job.holdRef);
    endJobSettleSpan(span, charged, o);
    const now = clock.now();
    const retentionMs = this.limits().video_retention_days * 86_400_000;
    const until = new Date(now.getTime() + retentionMs);
    const ok = await store.patch(job.id, this.deps.owner, {
      status: o.status,
      progress: o.status === 'completed' ? 100 : job.progress,
      errorCode: o.code ?? null,
      errorMessage: o.message ?? null,
      costNano: o.costNano > 0n ? charged : 0n,
      usageSeconds: o.usageSeconds ?? Number(job.seconds),
      fileName: o.file?.name ?? null,
      fileBytes: o.file ? BigInt(o.file.bytes) : null,
      completedAt: o.status === 'completed' ? now : null,
      expiresAt: o.status === 'completed' ? until : null,
      finishedAt: now,
      visibleUntil: until,
      vendorRequest: null,
      leaseOwner: null,
      leaseUntil: null,
    });
    if (!ok) {
      this.log.warn({ video: job.id }, 'video job finished by another process meanwhile');
      if (o.file) await this.deps.files.remove(o.file.name).catch(() => undefined);
      return;
    }
    this.log.info({ video: job.id, status: o.status, code: o.code, cost_nano: String(charged) }, 'video job finished');
    this.deps.onFinished?.(finishedVideo(job, o, charged));
  }
}
