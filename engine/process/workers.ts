// GATEWAY_WORKERS: several gateway processes on one port, so one machine's cores all serve calls; PostgreSQL
// already keeps money exact across processes, while PGlite belongs to one process. Workers take no stop signal
// themselves, since one signalled by both the service manager and the primary would exit without draining.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { planRoutes } from '../calls/vendor-routes.ts';

type Env = Record<string, string | undefined>;

/** One worker's metrics as prom-client's `getMetricsAsJSON` gives them (JSON, so they cross the IPC channel). */
type WorkerMetrics = unknown[];

/** What a worker tells the primary. */
type WorkerMessage =
  | { type: 'listening'; url: string }
  | { type: 'reloaded' }
  | { type: 'metrics-wanted'; id: number } // a scrape reached this worker: every worker's metrics, please
  | { type: 'metrics'; id: number; metrics: WorkerMetrics }; // this worker's, for the primary's collection `id`
/** What the primary tells a worker. */
type PrimaryMessage =
  | { type: 'reload' }
  | { type: 'stop' }
  | { type: 'collect-metrics'; id: number }
  | { type: 'workers-metrics'; id: number; metrics: WorkerMetrics[]; missing: number };

/** How long the primary waits for every worker's metrics; a scrape is answered within it. */
const METRICS_WAIT_MS = 2_000;

const MAX_WORKERS = 256;
/** A worker dying this often within RESTART_WINDOW_MS means something is wrong that restarting will not mend. */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;

/**
 * How many processes serve calls, or why the setting cannot be used. `vendors` gives config/vendors.yaml's ids,
 * read only when several workers are asked for (none may need the bundled simulator).
 */
export function workersFromEnv(env: Env, vendors: () => readonly string[]): { workers: number } | { problem: string } {
  const raw = env.GATEWAY_WORKERS?.trim();
  if (raw === undefined || raw === '') return { workers: 1 };
  const workers = raw === 'auto' ? availableParallelism() : Number(raw);
  if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS) {
    return { problem: `GATEWAY_WORKERS must be a whole number from 1 to ${MAX_WORKERS}, or auto (one per core); it is '${raw}'.` };
  }
  if (workers === 1) return { workers };
  if (!env.DATABASE_URL) {
    return {
      problem: `GATEWAY_WORKERS=${raw} needs DATABASE_URL: the embedded database (PGlite) belongs to one process. Set DATABASE_URL to a PostgreSQL server, or run one worker.`,
    };
  }
  const simulated = planRoutes(env, vendors()).simulated;
  if (simulated.length > 0) {
    const names = simulated.map((v) => v.toUpperCase()).join(', ');
    return {
      problem: `GATEWAY_WORKERS=${raw} needs real vendors: vendors ${names} would be served by the bundled simulator, which keeps its state (video jobs) in one process. Set GATEWAY_VENDOR_<X>_URLS, or run one worker.`,
    };
  }
  return { workers };
}

export const isWorker = (): boolean => cluster.isWorker;

let nextMetricsRequest = 0;

/** The worker's side: tell the primary it listens or reloaded, hear reloads and stops, and share metrics. */
export const workerLink = {
  tell(message: WorkerMessage): void {
    process.send?.(message);
  },
  onReload(reload: () => void): void {
    process.on('message', (m: PrimaryMessage) => {
      if (m?.type === 'reload') reload();
    });
  },
  /** Answers the primary's collections of every worker's metrics with this worker's. */
  onMetricsCollect(own: () => Promise<WorkerMetrics>): void {
    process.on('message', (m: PrimaryMessage) => {
      if (m?.type !== 'collect-metrics') return;
      own().then(
        (metrics) => workerLink.tell({ type: 'metrics', id: m.id, metrics }),
        () => undefined, // the primary counts this worker missing
      );
    });
  },
  /** Every worker's metrics, this one's included, through the primary; refused when one did not answer in time. */
  gatherMetrics(): Promise<WorkerMetrics[]> {
    const id = nextMetricsRequest++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error('the primary did not answer')), METRICS_WAIT_MS * 2);
      const onMessage = (m: PrimaryMessage) => {
        if (m?.type !== 'workers-metrics' || m.id !== id) return;
        if (m.missing > 0)
          finish(new Error(`${m.missing} of ${m.missing + m.metrics.length} workers did not answer within ${METRICS_WAIT_MS} ms`));
        else finish(null, m.metrics);
      };
      const finish = (err: Error | null, metrics?: WorkerMetrics[]) => {
        clearTimeout(timer);
        process.off('message', onMessage);
        if (err) reject(err);
        else resolve(metrics!);
      };
      process.on('message', onMessage);
      workerLink.tell({ type: 'metrics-wanted', id });
    });
  },
  /** Stops when the primary says so or disconnects; the group's stop signals are left to the primary. */
  onStop(stop: () => void): void {
    let stopped = false;
    const once = () => {
      if (!stopped) stop();
      stopped = true;
    };
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => undefined);
    process.on('message', (m: PrimaryMessage) => {
      if (m?.type === 'stop') once();
    });
    process.once('disconnect', once);
  },
};

interface PrimaryHooks {
  /** `exec`: the file the workers run (this program's entry). */
  exec: string;
  /** Once every worker listens: the pid file and the banner. */
  ready(url: string): void;
  /** Once every worker has exited after a stop. */
  stopped(): void;
}

/**
 * A scrape reaches one worker; the primary asks every serving worker for its metrics and hands that worker
 * the lot to add up (engine/observe/metrics.ts), so /metrics answers for the whole gateway.
 */
class MetricsCollections {
  private readonly open = new Map<number, { metrics: WorkerMetrics[]; waiting: number; done(): void }>();
  private next = 0;

  /** Asks each of `serving` for its metrics; `asker` gets them when all came, or at METRICS_WAIT_MS with those that did. */
  start(asker: Worker, askerId: number, serving: Worker[]): void {
    const id = this.next++;
    const entry = {
      metrics: [] as WorkerMetrics[],
      waiting: serving.length,
      done: () => {
        clearTimeout(timer);
        this.open.delete(id);
        const answer: PrimaryMessage = { type: 'workers-metrics', id: askerId, metrics: entry.metrics, missing: entry.waiting };
        if (asker.isConnected()) asker.send(answer);
      },
    };
    const timer = setTimeout(entry.done, METRICS_WAIT_MS);
    this.open.set(id, entry);
    for (const w of serving) w.send({ type: 'collect-metrics', id } satisfies PrimaryMessage);
  }

  arrived(id: number, metrics: WorkerMetrics): void {
    const entry = this.open.get(id);
    if (!entry) return; // too late: that scrape was answered without it
    entry.metrics.push(metrics);
    entry.waiting--;
    if (entry.waiting === 0) entry.done();
  }
}

/** Runs the primary until its workers have stopped; the process exits with the code it should. */
export function superviseWorkers(count: number, hooks: PrimaryHooks): void {
  cluster.setupPrimary({ exec: hooks.exec });
  const live = new Map<Worker, number>(); // worker → its index, 1-based
  const listening = new Set<Worker>();
  const restarts: number[] = [];
  let stopping = false;
  let started = false;
  let exitCode = 0;
  const collections = new MetricsCollections();

  const fork = (index: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork({ GATEWAY_WORKER_INDEX: String(index) });
      live.set(worker, index);
      worker.on('message', (m: WorkerMessage) => {
        if (m?.type === 'listening') {
          listening.add(worker);
          resolve(m.url);
        } else if (m?.type === 'reloaded') broadcastReload(worker);
        else if (m?.type === 'metrics-wanted') collections.start(worker, m.id, serving());
        else if (m?.type === 'metrics') collections.arrived(m.id, m.metrics);
      });
      worker.once('exit', (code, signal) => {
        live.delete(worker);
        listening.delete(worker);
        reject(new Error(`worker ${index} exited before it listened (${signal ?? `code ${code}`})`));
        onExit(index, code, signal);
      });
    });

  const serving = () => [...listening].filter((w) => w.isConnected());
  const broadcastReload = (except?: Worker) => {
    for (const w of live.keys()) if (w !== except) w.send({ type: 'reload' } satisfies PrimaryMessage);
  };

  /** Every worker drains and exits; then the primary exits with `code`. */
  const stopAll = (code: number) => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    // One still starting has taken no call: it is not waited for.
    for (const w of live.keys()) {
      if (listening.has(w) && w.isConnected()) w.send({ type: 'stop' } satisfies PrimaryMessage);
      else w.process.kill('SIGKILL');
    }
    if (live.size === 0) finish();
  };

  const finish = () => {
    if (started) hooks.stopped();
    process.exit(exitCode);
  };

  function onExit(index: number, code: number | null, signal: string | null): void {
    if (stopping) {
      if (live.size === 0) finish();
      return;
    }
    if (!started) return; // the start fails as a whole (below)
    const now = Date.now();
    restarts.push(now);
    while (restarts.length > 0 && restarts[0]! < now - RESTART_WINDOW_MS) restarts.shift();
    const how = signal ?? `code ${code}`;
    if (restarts.length > MAX_RESTARTS) {
      console.error(`worker ${index} exited (${how}), the ${restarts.length}th in a minute: stopping the gateway.`);
      stopAll(1);
      return;
    }
    console.error(`worker ${index} exited (${how}); starting another.`);
    fork(index).catch(() => undefined);
  }

  process.on('SIGHUP', () => broadcastReload());
  process.on('SIGTERM', () => stopAll(0));
  process.on('SIGINT', () => stopAll(0));

  void (async () => {
    try {
      // The first alone: it migrates the database, and a configuration problem is reported once.
      const url = await fork(1);
      await Promise.all(Array.from({ length: count - 1 }, (_, i) => fork(i + 2)));
      started = true;
      hooks.ready(url);
    } catch {
      stopAll(1);
    }
  })();
}
