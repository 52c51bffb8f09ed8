// Sends the durable webhook delivery queue. A delivery is claimed with a lease and SKIP LOCKED so two processes
// never send it at once, and its attempt is counted as it is claimed so a process dying mid-send still uses it up;
// times are the database's, one clock for every process (docs/decisions/alerts.md).
import { Agent, request } from 'undici';
import { JobRunner } from '../core/job-runner.ts';
import type { Db } from '../db/db.ts';
import { type AddressGuard, literalRefused } from './address-guard.ts';
import { DELIVERY_POLICY, type DeliveryPolicy, retryDelayMs } from './policy.ts';
import { SIGNATURE_HEADER, signatureHeader } from './signature.ts';

type Log = { warn: (o: object, m: string) => void; error: (o: object, m: string) => void };

interface Claimed {
  id: string;
  attempts: number;
  url: string;
  secret: string;
  body: string;
  event_id: string;
}

interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
  excerpt: string | null;
  durationMs: number;
}

export class DeliveryWorker {
  private readonly agent: Agent;
  private readonly runner: JobRunner;

  constructor(
    private readonly deps: { db: Db; guard: AddressGuard; log: () => Log },
    private readonly policy: DeliveryPolicy = DELIVERY_POLICY,
  ) {
    // The guard's lookup runs inside each connection: the address connected to is the address checked. The
    // timeouts bound a receiver that accepts and never answers. undici follows no redirect unless asked to: a
    // redirect cannot lead a delivery past the guard's check of the URL.
    this.agent = new Agent({
      connect: { lookup: deps.guard.lookup, timeout: policy.timeoutMs },
      headersTimeout: policy.timeoutMs,
      bodyTimeout: policy.timeoutMs,
    });
    this.runner = new JobRunner({
      round: (limit) => this.round(limit),
      batch: policy.batch,
      intervalMs: policy.pollMs,
      log: deps.log,
      failure: 'webhook delivery round failed',
    });
  }

  start(): void {
    this.runner.start();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
    await this.agent.close().catch(() => undefined);
  }

  /** Deliveries were queued by this process: look now. */
  kick(): void {
    this.runner.kick();
  }

  /** Resolves once a round that is running (or asked for) has finished (tests). */
  async settled(): Promise<void> {
    await this.runner.settled();
  }

  /** Claims and sends at most `limit` due deliveries; returns how many were claimed. */
  async round(limit: number): Promise<number> {
    const leaseSeconds = Math.ceil((this.policy.timeoutMs * 2) / 1000) + 5;
    const claimed = await this.deps.db.query<Claimed>(
      `UPDATE webhook_deliveries d SET locked_until = now() + make_interval(secs => $2), attempts = d.attempts + 1
         FROM webhooks w, webhook_events e
        WHERE d.id IN (SELECT id FROM webhook_deliveries
                        WHERE state = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until < now())
                        ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
          AND w.id = d.webhook_id AND e.id = d.event_id
      RETURNING d.id, d.attempts, w.url, w.secret, e.body, e.id AS event_id`,
      [limit, leaseSeconds],
    );
    await Promise.all(claimed.rows.map((c) => this.deliver(c)));
    return claimed.rows.length;
  }

  private async deliver(c: Claimed): Promise<void> {
    const outcome = await this.send(c);
    const ok = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
    const last = !ok && c.attempts >= this.policy.maxAttempts;
    await this.deps.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO webhook_attempts (delivery_id, n, status_code, error, excerpt, duration_ms) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (delivery_id, n) DO NOTHING`,
        [c.id, c.attempts, outcome.statusCode, outcome.error, outcome.excerpt, outcome.durationMs],
      );
      await tx.query(
        `UPDATE webhook_deliveries SET state = $2, locked_until = NULL,
                next_attempt_at = CASE WHEN $2 = 'pending' THEN now() + make_interval(secs => $3::double precision) ELSE next_attempt_at END
          WHERE id = $1 AND state = 'pending'`,
        [c.id, ok ? 'delivered' : last ? 'failed' : 'pending', retryDelayMs(this.policy, c.attempts) / 1000],
      );
    });
    if (!ok)
      this.deps
        .log()
        .warn(
          { delivery: c.id, attempt: c.attempts, status: outcome.statusCode, error: outcome.error, final: last },
          'webhook delivery failed',
        );
  }

  /** One signed POST, bounded by the policy's timeout; never throws. */
  async send(c: Pick<Claimed, 'url' | 'secret' | 'body' | 'event_id'>): Promise<AttemptOutcome> {
    const started = Date.now();
    const done = (o: Omit<AttemptOutcome, 'durationMs'>): AttemptOutcome => ({ ...o, durationMs: Date.now() - started });
    let url: URL;
    try {
      url = new URL(c.url);
    } catch {
      return done({ statusCode: null, error: 'the URL is not valid', excerpt: null });
    }
    const literal = literalRefused(url, this.deps.guard.allowPrivate);
    if (literal) return done({ statusCode: null, error: `refused: ${literal} is a private, loopback or reserved address`, excerpt: null });
    // Signed at send time with real time (not the engine's clock): receivers check the timestamp against theirs.
    const t = Math.floor(Date.now() / 1000);
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'gateway-webhooks/1',
          'x-gateway-event-id': c.event_id,
          [SIGNATURE_HEADER]: signatureHeader(c.secret, t, c.body),
        },
        body: c.body,
        signal: AbortSignal.timeout(this.policy.timeoutMs),
      });
      let excerpt = '';
      for await (const chunk of res.body) {
        excerpt += Buffer.from(chunk as Uint8Array).toString('utf8');
        if (excerpt.length >= this.policy.excerptChars) break; // the rest is not read: a bounded excerpt only
      }
      return done({ statusCode: res.statusCode, error: null, excerpt: excerpt.slice(0, this.policy.excerptChars) || null });
    } catch (e) {
      const err = e as Error & { cause?: Error; code?: string };
      const reason =
        err.cause?.name === 'AddressRefused' || err.name === 'AddressRefused'
          ? `refused: ${(err.cause ?? err).message}`
          : (err.cause?.message ?? err.message ?? String(e));
      return done({ statusCode: null, error: reason.slice(0, this.policy.excerptChars), excerpt: null });
    }
  }
}
