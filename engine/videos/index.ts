// Asynchronous video jobs, put together: store (database), files (GATEWAY_VIDEO_STORE), worker (vendor
// polling) and the doors. engine/gateway.ts registers `routes` as a plugin, then calls start() and, on close, stop().
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { TransformRegistry } from '../calls/prepare.ts';
import type { UpstreamClient } from '../calls/upstream.ts';
import type { VendorRoutes } from '../calls/vendor-routes.ts';
import type { Runtime } from '../catalog/runtime.ts';
import type { Clock } from '../core/clock.ts';
import { SettingError } from '../core/setting-error.ts';
import type { Db } from '../db/db.ts';
import type { Accounts } from '../money/accounts.ts';
import type { Telemetry } from '../telemetry/sdk.ts';
import type { VideoFiles } from './files.ts';
import { createDiskVideoFiles } from './files-disk.ts';
import { s3VideoFilesOnDemand } from './files-s3-on-demand.ts';
import { registerVideoRoutes } from './routes.ts';
import { createVideoStore, type VideoStore } from './store.ts';
import type { VideoStoreSetting } from './video-store-setting.ts';
import { VideoWorker, type VideoWorkerDeps, type WorkerLog } from './worker.ts';

const DEFAULT_VIDEO_POLL_MS = 5000;

interface VideoServiceDeps {
  db: Db;
  accounts: Accounts;
  runtime: Runtime;
  routes: VendorRoutes;
  upstream: UpstreamClient;
  registry: TransformRegistry;
  clock: Clock;
  /** GATEWAY_DATA_DIR: the file store keeps videos in `<dir>/videos` (a temporary folder for `memory://`). */
  dataDir: string;
  /** GATEWAY_VIDEO_STORE, read at start (videoStoreFromEnv). */
  fileStore: VideoStoreSetting;
  /** GATEWAY_VIDEO_POLL_MS. */
  pollMs?: number;
  /** Traces, when telemetry is on: the job's request, its submission and its settle in the client's trace. */
  telemetry?: Telemetry | null;
  /** Told once per finished job (the video.finished webhook event). */
  onFinished?: VideoWorkerDeps['onFinished'];
}

export interface VideoService {
  store: VideoStore;
  files: VideoFiles;
  worker: VideoWorker;
  /** The route plugin (for buildServer's `plugins`). */
  routes(app: FastifyInstance): Promise<void>;
  start(log?: WorkerLog): void;
  stop(): Promise<void>;
}

/** GATEWAY_VIDEO_POLL_MS, or the default; a value that is not a positive number is refused at start. */
export function videoPollMs(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_VIDEO_POLL_MS;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0)
    throw new SettingError(`GATEWAY_VIDEO_POLL_MS must be a positive number of milliseconds, not '${raw}'`);
  return n;
}

/** The store GATEWAY_VIDEO_STORE chose: this host's data folder, or a bucket every host reaches. */
export function openVideoFiles(setting: VideoStoreSetting, dataDir: string): VideoFiles {
  return setting.kind === 's3' ? s3VideoFilesOnDemand(setting) : createDiskVideoFiles(dataDir);
}

export function createVideoService(deps: VideoServiceDeps): VideoService {
  const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const store = createVideoStore(deps.db);
  const files = openVideoFiles(deps.fileStore, deps.dataDir);
  const worker = new VideoWorker({
    store,
    files,
    accounts: deps.accounts,
    runtime: deps.runtime,
    routes: deps.routes,
    upstream: deps.upstream,
    clock: deps.clock,
    pollMs: deps.pollMs ?? DEFAULT_VIDEO_POLL_MS,
    owner,
    telemetry: deps.telemetry ?? null,
    onFinished: deps.onFinished,
  });
  let secret: Promise<string> | null = null;
  const urlSecret = () => {
    secret ??= store.urlSecret().catch((e) => {
      secret = null;
      throw e;
    });
    return secret;
  };
  return {
    store,
    files,
    worker,
    async routes(app) {
      registerVideoRoutes(app, {
        runtime: deps.runtime,
        accounts: deps.accounts,
        registry: deps.registry,
        clock: deps.clock,
        store,
        files,
        worker,
        owner,
        urlSecret,
        routes: deps.routes,
        telemetry: deps.telemetry ?? null,
      });
    },
    start: (log) => worker.start(log),
    async stop() {
      await worker.stop();
      files.close();
    },
  };
}
