// The `pg` (PostgreSQL server) side of the Db seam.
//
// - `query` runs on any pooled connection. Without params it uses the simple protocol, so a string may
//   hold several statements (migrations rely on that); with params it is one statement.
// - `transaction` runs BEGIN … COMMIT on one pooled client; ROLLBACK (and the client is discarded) when
//   fn throws. Do not call `db.query` inside fn for work that belongs to the transaction: use `tx`.
// - `listen` uses one dedicated client for every channel; when that connection drops it reconnects with
//   backoff and re-issues LISTEN for every channel still subscribed. Notifications sent while it was
//   down are lost (NOTIFY is not durable): once the LISTENs are back, every subscriber's `onGap` runs, so a
//   cache fed by notifications flushes itself rather than serve what it missed. Until it is back,
//   `seemsReachable` says no: the server's going away is seen there first, with no query of our own.
// - Types as `pg` returns them: int8 (bigint columns, count(*)) and numeric arrive as decimal strings,
//   timestamptz as Date, text[] as string[]. The PGlite side is configured to match.
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Db, Queryable, QueryResult } from './db.ts';
import { withArrayLiterals } from './pg-array.ts';

interface PgDbOptions {
  url: string;
  /** Pool size (default 20). */
  max?: number;
  /** Called with connection-level errors that are recovered from (idle client dropped, listener reconnect). */
  onError?: (err: Error) => void;
}

const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

// Statements with parameters are prepared once per connection, by a name derived from their text: the server
// then parses and plans the ledger's large statements once, not at every call. Our SQL texts are fixed strings
// (values go in parameters), so the names are few; past MAX_PREPARED texts, a statement runs unnamed. A text
// whose columns are a table's whole row (`SELECT *`, `RETURNING t.*`) is never prepared: a migration adding a
// column, run by a newer process during a rolling restart, would fail it here ("cached plan must not change
// result type") until this process restarts.
const MAX_PREPARED = 1_000;
const WHOLE_ROW = /(?:SELECT|RETURNING|,)\s+(?:\w+\.)?\*/i;
const statementNames = new Map<string, string | undefined>();
function statementName(sql: string): string | undefined {
  if (statementNames.has(sql)) return statementNames.get(sql);
  let name: string | undefined;
  if (statementNames.size < MAX_PREPARED && !WHOLE_ROW.test(sql)) {
    name = `s${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
  }
  statementNames.set(sql, name);
  return name;
}

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

export async function openPg(opts: PgDbOptions): Promise<Db> {
  const onError = opts.onError ?? (() => {});
  const pool = new pg.Pool({ connectionString: opts.url, max: opts.max ?? 20 });
  pool.on('error', (err) => onError(err)); // an idle client died; the pool replaces it
  const poolQ = wrap(pool as never);

  // --- LISTEN on one dedicated, self-healing client ---
  const handlers = new Map<string, Set<(payload: string) => void>>();
  /** What each subscription does when notifications may have been lost. */
  const gapHandlers = new Map<object, () => void>();
  /** A listening connection existed before: the next one to come up is a reconnect, with a gap behind it. */
  let everListened = false;
  let listener: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let closed = false;
  let retryTimer: NodeJS.Timeout | null = null;
  let backoff = 100;
  /** The listening connection dropped and has not come back: the server is most likely down. */
  let listenerLost = false;

  const dispatch = (msg: pg.Notification) => {
    const set = handlers.get(msg.channel);
    if (!set) return;
    for (const h of [...set]) {
      try {
        h(msg.payload ?? '');
      } catch (e) {
        onError(e as Error);
      }
    }
  };

  const reportGap = () => {
    for (const onGap of [...gapHandlers.values()]) {
      try {
        onGap();
      } catch (e) {
        onError(e as Error);
      }
    }
  };

  const scheduleReconnect = () => {
    if (closed || retryTimer || handlers.size === 0) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      ensureListener().catch((e) => {
        onError(e as Error);
        backoff = Math.min(backoff * 2, 5000);
        scheduleReconnect();
      });
    }, backoff);
    retryTimer.unref?.();
  };

  /**
   * Asked while the listener is lost (a call being admitted): try to reconnect now rather than at the end of the
   * backoff, at most every 100 ms, so calls pass again as soon as the server is back, not up to 5 s later.
   */
  let lastNudgeMs = 0;
  const nudgeReconnect = () => {
    const now = Date.now();
    if (closed || connecting || handlers.size === 0 || now - lastNudgeMs < 100) return;
    lastNudgeMs = now;
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = null;
    ensureListener().catch((e) => {
      onError(e as Error);
      scheduleReconnect();
    });
  };

  const ensureListener = async (): Promise<pg.Client> => {
    if (listener) return listener;
    if (connecting) return connecting;
    connecting = (async () => {
      const c = new pg.Client({ connectionString: opts.url });
      c.on('notification', dispatch);
      const lost = (err?: Error) => {
        if (err) onError(err);
        if (!closed) listenerLost = true;
        if (listener === c) listener = null;
        c.removeAllListeners('notification');
        scheduleReconnect();
      };
      c.on('error', (err) => lost(err));
      c.on('end', () => lost());
      try {
        await c.connect();
        for (const ch of handlers.keys()) await c.query(`LISTEN ${quoteIdent(ch)}`);
      } catch (e) {
        c.removeAllListeners('end');
        c.removeAllListeners('error');
        c.on('error', () => {});
        await c.end().catch(() => {});
        throw e;
      }
      backoff = 100;
      listener = c;
      listenerLost = false;
      if (everListened) reportGap();
      everListened = true;
      return c;
    })();
    try {
      return await connecting;
    } finally {
      connecting = null;
    }
  };

  const db: Db = {
    kind: 'postgres',
    query: (sql, params) => poolQ.query(sql, params),
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    seemsReachable: () => {
      if (listenerLost) nudgeReconnect();
      return !listenerLost;
    },

    async reachable(waitMs) {
      if (!listenerLost) return true;
      nudgeReconnect();
      const attempt = connecting;
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
      return !listenerLost;
    },

    async transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: { flushWal?: boolean }): Promise<T> {
      const client = await pool.connect();
      let broken: Error | undefined;
      // A checked-out client has no pool listener: a server shutdown (57P01) would be an uncaught 'error'
      // event and end the process. The failing query rejects on its own; this only keeps the process up.
      const onClientError = (err: Error) => {
        broken = err;
        onError(err);
      };
      client.on('error', onClientError);
      try {
        // One round trip either way: the setting rides in the same simple-protocol message as BEGIN.
        await client.query(opts?.flushWal === false ? 'BEGIN; SET LOCAL synchronous_commit = off' : 'BEGIN');
        try {
          const out = await fn(wrap(client));
          await client.query('COMMIT');
          return out;
        } catch (e) {
          try {
            await client.query('ROLLBACK');
          } catch (re) {
            broken = re as Error;
          }
          throw e;
        }
      } finally {
        client.off('error', onClientError);
        client.release(broken);
      }
    },

    async listen(channel, onPayload, onGap) {
      let set = handlers.get(channel);
      const fresh = !set;
      if (!set) handlers.set(channel, (set = new Set()));
      set.add(onPayload);
      const subscription = {};
      if (onGap) gapHandlers.set(subscription, onGap);
      if (fresh) {
        const c = await ensureListener();
        // ensureListener LISTENs to every channel when it connects; LISTEN twice is harmless.
        await c.query(`LISTEN ${quoteIdent(channel)}`);
      } else {
        await ensureListener();
      }
      return async () => {
        gapHandlers.delete(subscription);
        const s = handlers.get(channel);
        if (!s) return;
        s.delete(onPayload);
        if (s.size === 0) {
          handlers.delete(channel);
          if (listener) await listener.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
        }
      };
    },

    async notify(channel, payload) {
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },

    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      handlers.clear();
      gapHandlers.clear();
      const l = listener;
      listener = null;
      if (l) {
        l.removeAllListeners('end');
        l.removeAllListeners('error');
        l.on('error', () => {});
        await l.end().catch(() => {});
      }
      await pool.end();
    },
  };
  return db;
}
