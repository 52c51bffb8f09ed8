// The thin database seam: `pg` (PostgreSQL server) and PGlite (embedded) both sit behind it,
// and the same SQL migrations serve both.

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
}

/** A transaction's statements. */
export interface Transaction extends Queryable {
  /**
   * The transaction's last statement, sent with its COMMIT in one round trip: call it last, as nothing after it is
   * in the transaction. When the statement fails, nothing is committed and it rejects with the statement's error.
   */
  queryAndCommit<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
}

/** TransactionOptions.genericPlans, as each database sets it. */
export const GENERIC_PLANS_SQL = 'SET LOCAL plan_cache_mode = force_generic_plan';

export interface TransactionOptions {
  flushWal?: boolean;
  lockTimeoutMs?: number;
  /** Every statement reads one snapshot, and none writes (REPEATABLE READ, READ ONLY): a view read in parts. */
  snapshot?: boolean;
  /**
   * Prepared statements run on their generic plan. For statements that find rows by id it is the plan any ids
   * get, and PostgreSQL otherwise re-plans a statement whose generic plan it guesses dearer at every run.
   */
  genericPlans?: boolean;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Runs fn inside BEGIN … COMMIT on one connection; ROLLBACK when it throws. `flushWal: false`: the COMMIT
   * returns before the server has flushed its write-ahead log to disk (`synchronous_commit = off` for this
   * transaction): a crash of the database server can lose it, a crash of the caller cannot. `lockTimeoutMs`: a
   * statement that waits longer than this for a row lock fails with 55P03 (`lock_timeout`; PostgreSQL only).
   * `snapshot`: see TransactionOptions (the embedded database's one connection runs nothing else meanwhile anyway).
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /**
   * Subscribes to NOTIFY on a channel; returns the unsubscribe function. `senderPid` is the server pid of the
   * session that sent the notification (PostgreSQL only). `onGap` is called each time the
   * listening connection came back after a drop: NOTIFY is not durable, so what was sent meanwhile is lost,
   * and a cache fed by the channel must flush or re-read itself there (never called by the embedded database,
   * whose one in-process connection cannot drop).
   */
  listen(channel: string, onPayload: (payload: string, senderPid?: number) => void, onGap?: () => void): Promise<() => Promise<void>>;
  /**
   * The server pids of the connections (of every process on this database) listening on `channel` now, read
   * on `q` (a transaction sees who listens before its commit). Absent for the embedded database: one process.
   */
  listeners?(channel: string, q?: Queryable): Promise<number[]>;
  /** The server pid of this Db's listening connection while it is up: the name `listeners` gives it. */
  listenerPid?(): number | undefined;
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
  /**
   * False while the server looks gone (its listening connection dropped and has not come back): what admits
   * calls without a query asks this first. Absent for the embedded database, which is always there.
   */
  seemsReachable?(): boolean;
  /**
   * As `seemsReachable`, but while the server looks gone it tries the listening connection again first, waiting
   * at most `waitMs` for it: the first calls after a restart of the server pass rather than being refused.
   */
  reachable?(waitMs: number): Promise<boolean>;
  /** Connections of a server pool, for the metrics; absent for the embedded database (one in-process connection). */
  poolUse?(): { total: number; idle: number; waiting: number };
}
