// The `pg` (PostgreSQL server) side of the Db seam (its contract: db.ts). A query without params uses the simple
// protocol because migrations send several statements in one string; int8 and numeric arrive as decimal strings,
// as on PGlite, so amounts are never read through a float.
import type { Writable } from 'node:stream';
import pg from 'pg';
import { type Db, GENERIC_PLANS_SQL, type Queryable, type QueryResult, type Transaction, type TransactionOptions } from './db.ts';
import { withArrayLiterals } from './pg-array.ts';
import { statementName } from './statement-names.ts';

interface PgDbOptions {
  url: string;
  /** Pool size (default 20). */
  max?: number | undefined;
  /** Called with connection-level errors that are recovered from (idle client dropped, listener reconnect). */
  onError?: ((err: Error) => void) | undefined;
}

const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

// Who listens on a channel is told by a shared advisory lock the listening connection holds while it LISTENs
// there (taken after the LISTEN, so a holder receives every notification committed after it is seen). The lock
// ends with the connection, so a process gone is never waited for. Key: (PRESENCE, hash of the channel).
const PRESENCE = 1280595022;
const PRESENCE_KEY = `${PRESENCE}, hashtext($1) & 2147483647`;
const LOCK_PRESENCE = `SELECT pg_advisory_lock_shared(${PRESENCE_KEY})`;
const UNLOCK_PRESENCE = `SELECT pg_advisory_unlock_shared(${PRESENCE_KEY})`;
const LISTENERS = `SELECT pid FROM pg_locks
  WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = ${PRESENCE}::oid
    AND objid = (hashtext($1) & 2147483647)::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

type OnPayload = (payload: string, senderPid?: number) => void;

function wrap(client: { query: (sql: string, params?: unknown[]) => Promise<pg.QueryResult> }): Queryable {
  return {
    async query<T>(sql: string, params?: unknown[]): Promise<QueryResult<T>> {
      const r =
        params && params.length > 0
          ? await client.query({ name: statementName(sql), text: sql, values: withArrayLiterals(params) } as never)
          : await client.query(sql);
      // A multi-statement simple query answers an array of results: keep the last one.
      const last = (Array.isArray(r) ? r[r.length - 1] : r) as pg.QueryResult;
      return { rows: (last?.rows ?? []) as T[], rowCount: last?.rowCount ?? 0 };
    },
  };
}

/**
 * The one dedicated, self-healing client every LISTEN rides on. It connects at the first subscription; when
 * it drops it reconnects with backoff and LISTENs again to every channel still subscribed.
 */
class PgListener {
  private readonly handlers = new Map<string, Set<OnPayload>>();
  /** What each subscription does when notifications may have been lost. */
  private readonly gapHandlers = new Map<object, () => void>();
  /** A listening connection existed before: the next one to come up is a reconnect, with a gap behind it. */
  private everListened = false;
  private listener: pg.Client | null = null;
  /** The channels whose presence lock the listening connection holds (each once: advisory locks stack). */
  private present = new Set<string>();
  private connecting: Promise<pg.Client> | null = null;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private backoff = 100;
  private lastNudgeMs = 0;
  /** The listening connection dropped and has not come back: the server is most likely down. */
  private lost = false;

  constructor(
    private readonly url: string,
    private readonly onError: (err: Error) => void,
  ) {}

  seemsReachable(): boolean {
    if (this.lost) this.nudgeReconnect();
    return !this.lost;
  }

  async reachable(waitMs: number): Promise<boolean> {
    if (!this.lost) return true;
    this.nudgeReconnect();
    const attempt = this.connecting;
    if (attempt) {
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((r) => (timer = setTimeout(r, waitMs)));
      await Promise.race([
        attempt.then(
          () => undefined,
          () => undefined,
        ),
        waited,
      ]);
      clearTimeout(timer);
    }
    return !this.lost;
  }

  /** The server pid of the listening connection while it is up. */
  pid(): number | undefined {
    return (this.listener as { processID?: number } | null)?.processID ?? undefined;
  }

  async listen(channel: string, onPayload: OnPayload, onGap?: () => void): Promise<() => Promise<void>> {
    let set = this.handlers.get(channel);
    const fresh = !set;
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(onPayload);
    const subscription = {};
    if (onGap) this.gapHandlers.set(subscription, onGap);
    if (fresh) {
      const c = await this.ensureListener();
      // ensureListener LISTENs to every channel when it connects; LISTEN twice is harmless.
      await c.query(`LISTEN ${quoteIdent(channel)}`);
      await this.lockPresence(c, channel);
    } else {
      await this.ensureListener();
    }
    return async () => {
      this.gapHandlers.delete(subscription);
      const s = this.handlers.get(channel);
      if (!s) return;
      s.delete(onPayload);
      if (s.size === 0) {
        this.handlers.delete(channel);
        const l = this.listener;
        if (l && this.present.delete(channel)) await l.query(UNLOCK_PRESENCE, [channel]).catch(() => {});
        if (l) await l.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
      }
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.handlers.clear();
    this.gapHandlers.clear();
    const l = this.listener;
    this.listener = null;
    if (l) await endQuietly(l);
  }

  private async lockPresence(c: pg.Client, channel: string): Promise<void> {
    if (this.present.has(channel)) return;
    this.present.add(channel);
    await c.query(LOCK_PRESENCE, [channel]);
  }

  private dispatch(msg: pg.Notification): void {
    const set = this.handlers.get(msg.channel);
    if (!set) return;
    for (const h of [...set]) {
      try {
        h(msg.payload ?? '', msg.processId);
      } catch (e) {
        this.onError(e as Error);
      }
    }
  }

  private reportGap(): void {
    for (const onGap of [...this.gapHandlers.values()]) {
      try {
        onGap();
      } catch (e) {
        this.onError(e as Error);
      }
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer || this.handlers.size === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.ensureListener().catch((e) => {
        this.onError(e as Error);
        this.backoff = Math.min(this.backoff * 2, 5000);
        this.scheduleReconnect();
      });
    }, this.backoff);
    this.retryTimer.unref?.();
  }

  /**
   * Asked while the listener is lost (a call being admitted): try to reconnect now rather than at the end of the
   * backoff, at most every 100 ms, so calls pass again as soon as the server is back, not up to 5 s later.
   */
  private nudgeReconnect(): void {
    const now = Date.now();
    if (this.closed || this.connecting || this.handlers.size === 0 || now - this.lastNudgeMs < 100) return;
    this.lastNudgeMs = now;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.ensureListener().catch((e) => {
      this.onError(e as Error);
      this.scheduleReconnect();
    });
  }

  private async ensureListener(): Promise<pg.Client> {
    if (this.listener) return this.listener;
    if (this.connecting) return this.connecting;
    this.connecting = this.connect();
    try {
      return await this.connecting;
    } finally {
      this.connecting = null;
    }
  }

  private async connect(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: this.url });
    const dispatch = (msg: pg.Notification) => this.dispatch(msg);
    c.on('notification', dispatch);
    const lost = (err?: Error) => {
      if (err) this.onError(err);
      if (!this.closed) this.lost = true;
      if (this.listener === c) this.listener = null;
      c.removeAllListeners('notification');
      this.scheduleReconnect();
    };
    c.on('error', (err) => lost(err));
    c.on('end', () => lost());
    try {
      await c.connect();
      this.present = new Set();
      for (const ch of this.handlers.keys()) {
        await c.query(`LISTEN ${quoteIdent(ch)}`);
        await this.lockPresence(c, ch);
      }
    } catch (e) {
      await endQuietly(c);
      throw e;
    }
    this.backoff = 100;
    this.listener = c;
    this.lost = false;
    if (this.everListened) this.reportGap();
    this.everListened = true;
    return c;
  }
}

/** Ends a client whose end or errors no longer matter to anyone. */
async function endQuietly(c: pg.Client): Promise<void> {
  c.removeAllListeners('end');
  c.removeAllListeners('error');
  c.on('error', () => {});
  await c.end().catch(() => {});
}

/** A transaction's opening: BEGIN and its settings, in one simple-protocol message. */
function beginText(opts?: TransactionOptions): string {
  const out = [opts?.snapshot ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN'];
  if (opts?.flushWal === false) out.push('SET LOCAL synchronous_commit = off');
  if (opts?.lockTimeoutMs !== undefined) out.push(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(opts.lockTimeoutMs))}`);
  if (opts?.genericPlans) out.push(GENERIC_PLANS_SQL);
  return out.join('; ');
}

/**
 * Statements sent in one turn of the event loop leave in one write: the pool's clients pipeline (each statement is
 * sent without waiting for the one before), so BEGIN rides with the first statement and statements sent together
 * cost one round trip.
 */
function oneWritePerTurn(client: pg.PoolClient): () => void {
  const stream = (client as unknown as { connection: { stream: Writable } }).connection.stream;
  let corked = false;
  return () => {
    if (corked) return;
    corked = true;
    stream.cork();
    queueMicrotask(() => {
      corked = false;
      stream.uncork();
    });
  };
}

/** BEGIN … COMMIT on one pooled client; ROLLBACK, and the client discarded if that failed too, when fn throws. */
async function pgTransaction<T>(
  pool: pg.Pool,
  onError: (err: Error) => void,
  fn: (tx: Transaction) => Promise<T>,
  opts?: TransactionOptions,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client has no pool listener: a server shutdown (57P01) would be an uncaught 'error'
  // event and end the process. The failing query rejects on its own; this only keeps the process up.
  const onClientError = (err: Error) => {
    broken = err;
    onError(err);
  };
  client.on('error', onClientError);
  const cork = oneWritePerTurn(client);
  const q = wrap(client);
  // BEGIN goes with the first statement; a transaction that ran none has nothing to end. Should BEGIN fail, the
  // connection is gone and the statements behind it fail with it.
  let state = 'idle' as 'idle' | 'begun' | 'ended';
  const send = <R>(sql: string, params?: unknown[]): Promise<QueryResult<R>> => {
    if (state === 'ended') return Promise.reject(new Error('db: a statement after the transaction committed'));
    cork();
    if (state === 'idle') client.query(beginText(opts)).catch(() => {});
    state = 'begun';
    return q.query<R>(sql, params);
  };
  const tx: Transaction = {
    query: send,
    async queryAndCommit<R>(sql: string, params?: unknown[]) {
      const statement = send<R>(sql, params);
      // After a failed statement PostgreSQL answers this COMMIT with a rollback; the statement's error is thrown.
      const commit = client.query('COMMIT');
      state = 'ended';
      const [r, committed] = await Promise.all([statement, commit]);
      if (committed.command !== 'COMMIT') throw new Error(`db: the transaction ended in ${committed.command}, not COMMIT`);
      return r;
    },
  };
  try {
    try {
      const out = await fn(tx);
      if (state === 'begun') await client.query('COMMIT');
      return out;
    } catch (e) {
      try {
        if (state === 'begun') await client.query('ROLLBACK');
      } catch (re) {
        broken = re as Error;
      }
      throw e;
    }
  } finally {
    client.off('error', onClientError);
    client.release(broken);
  }
}

export async function openPg(opts: PgDbOptions): Promise<Db> {
  const onError = opts.onError ?? (() => {});
  const pool = new pg.Pool({ connectionString: opts.url, max: opts.max ?? 20, pipeline: true } as pg.PoolConfig);
  pool.on('error', (err) => onError(err)); // an idle client died; the pool replaces it
  // A server shutting down can send its error in the packet that completes a new connection: parsed after the pool
  // handed the client out and before a transaction's listener is on it. Unheard, it would end the process.
  pool.on('connect', (client) => client.on('error', (err) => client.listenerCount('error') === 1 && onError(err)));
  const poolQ = wrap(pool as never);
  const listener = new PgListener(opts.url, onError);
  return {
    kind: 'postgres',
    query: (sql, params) => poolQ.query(sql, params),
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    seemsReachable: () => listener.seemsReachable(),
    reachable: (waitMs) => listener.reachable(waitMs),
    transaction: (fn, txOpts) => pgTransaction(pool, onError, fn, txOpts),
    listen: (channel, onPayload, onGap) => listener.listen(channel, onPayload, onGap),
    async listeners(channel, q = poolQ) {
      const r = await q.query<{ pid: number }>(LISTENERS, [channel]);
      return r.rows.map((row) => Number(row.pid));
    },
    listenerPid: () => listener.pid(),
    async notify(channel, payload) {
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}
