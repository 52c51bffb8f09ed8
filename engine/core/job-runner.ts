// The polling loop the background workers share (the video worker, the webhook deliveries): one round at a
// time on a timer, each round a bounded batch. A round that took a full batch runs again at once, since more
// may be due; a round that failed is logged and the loop goes on at the next interval.

interface JobRunnerLog {
  error(obj: object, msg?: string): void;
}

interface JobRunnerOptions {
  /** One round: works on at most `limit` jobs and returns how many it took. */
  round: (limit: number) => Promise<number>;
  /** The most jobs one round takes. */
  batch: number;
  /** The wait between rounds when the last one did not fill its batch. */
  intervalMs: number;
  /** Read at each failure, so a log handed to the worker after it was made is the one used. */
  log: () => JobRunnerLog;
  /** The log line of a failed round. */
  failure: string;
}

export class JobRunner {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** A round was asked for while one ran: the next one starts at once. */
  private again = false;
  /** The timer set is for a round at once (a kick, or a full batch), which `settled` waits for too. */
  private dueNow = false;
  private stopped = true;

  constructor(private readonly options: JobRunnerOptions) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** No round starts after this; resolves once the round in progress has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.dueNow = false;
    await this.running;
  }

  /** Work is waiting: a round now, or once more right after the one in progress. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  /** Resolves once no round is running or asked for at once (tests). */
  async settled(): Promise<void> {
    // A round asked for at once sits behind a 0 ms timer: a later 0 ms timer fires after it has begun.
    while (this.running || this.dueNow) await (this.running ?? new Promise((r) => setTimeout(r, 0)));
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.dueNow = ms === 0;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.dueNow = false;
      // `then` runs its callback later, so `running` is set before the round's end clears it.
      this.running = this.run().then(
        (full) => this.next(full),
        () => this.next(false),
      );
    }, ms);
    this.timer.unref();
  }

  /** One round; true when it filled its batch. */
  private async run(): Promise<boolean> {
    try {
      return (await this.options.round(this.options.batch)) >= this.options.batch;
    } catch (e) {
      this.options.log().error({ err: e }, this.options.failure);
      return false;
    }
  }

  private next(full: boolean): void {
    this.running = null;
    const now = full || this.again;
    this.again = false;
    this.schedule(now ? 0 : this.options.intervalMs);
  }
}
