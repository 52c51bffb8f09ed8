// Announcing a key change to every gateway process and waiting, at most 2 s, until each has applied it: a NOTIFY
// reaches each process on its own connection, so without the wait another process could still serve the key as it
// was (docs/decisions/key-changes.md).
import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../db/db.ts';

export const KEY_CHANNEL = 'key_revoked';
const APPLIED_CHANNEL = 'key_revoked_applied';
/** How long the answers of one change are kept: longer than any wait for them. */
const KEEP_MS = 10_000;

/** A change announced in a transaction; `applied` is called once it committed. */
export interface Announced {
  /** Drops the keys here again and waits (bounded) until every other process has dropped them. */
  applied(): Promise<void>;
}

/** The answers this process has seen: `<sender pid> <payload>` → the listener pids that applied it. */
export class AppliedBook {
  private readonly seen = new Map<string, { pids: Set<number>; at: number }>();
  private readonly waiters = new Set<() => void>();

  /** An answer `<listener pid> <sender pid> <payload>`, as `listenForChanges` sends it. */
  note(message: string): void {
    const m = /^(\d+) (\d+) (.*)$/s.exec(message);
    if (!m) return;
    const now = Date.now();
    // Entries go in time order, so the old ones are at the front.
    for (const [k, v] of this.seen) {
      if (now - v.at < KEEP_MS) break;
      this.seen.delete(k);
    }
    const key = `${m[2]} ${m[3]}`;
    let entry = this.seen.get(key);
    if (!entry) this.seen.set(key, (entry = { pids: new Set(), at: now }));
    entry.pids.add(Number(m[1]));
    for (const w of [...this.waiters]) w();
  }

  /** Resolves with the pids that have not applied every key within `ms` (none: all did). */
  wait(keys: string[], pids: number[], ms: number): Promise<number[]> {
    const missing = () => pids.filter((p) => keys.some((k) => !this.seen.get(k)?.pids.has(p)));
    return new Promise((resolve) => {
      if (missing().length === 0) return resolve([]);
      const done = (left: number[]) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(left);
      };
      const check = () => {
        if (missing().length === 0) done([]);
      };
      const timer = setTimeout(() => done(missing()), ms);
      this.waiters.add(check);
    });
  }
}

interface ChangeDeps {
  db: Db;
  book: AppliedBook;
  /** Drops cached lookups in this process. */
  invalidate(payload: string): void;
  warn(obj: object, msg: string): void;
  /**
   * What this process must write before a change counts as applied here: what its calls hold on leases, per key, so
   * a key's new limit or class counts the calls it already has in flight (engine/money/in-flight.ts).
   */
  beforeApplied?: ((target: string) => Promise<void>) | undefined;
}

/** Runs `beforeApplied`; its failure is the next tick's to mend, never a reason to hold the change back. */
const written = (deps: ChangeDeps, target: string): Promise<void> =>
  (deps.beforeApplied?.(target) ?? Promise.resolve()).catch(() => undefined);

/**
 * Applies the changes other processes announce, as they arrive, and confirms each to its sender; notes the
 * confirmations this process's own changes wait for. Resolves with the functions that stop both.
 */
export function listenForChanges(deps: ChangeDeps): Promise<(() => Promise<void>)[]> {
  const { db, book, invalidate } = deps;
  const failed = (e: Error) => deps.warn({ err: e.message }, 'could not confirm a key change to its gateway process');
  const confirm = (payload: string, senderPid: number | undefined) => {
    const me = db.listenerPid?.();
    if (me === undefined || senderPid === undefined) return;
    db.notify(APPLIED_CHANNEL, `${me} ${senderPid} ${payload}`).catch(failed);
  };
  return Promise.all([
    db.listen(
      KEY_CHANNEL,
      (payload, senderPid) => {
        invalidate(targetOf(payload));
        void written(deps, targetOf(payload)).then(() => confirm(payload, senderPid));
      },
      // A reconnected listener may have missed closes and patches: every cached lookup goes.
      () => invalidate('*'),
    ),
    db.listen(APPLIED_CHANNEL, (message) => book.note(message)),
  ]);
}

/** What a notification names (a key id, `wallet:<id>` or `*`), without the change's tag after a space. */
function targetOf(payload: string): string {
  const space = payload.indexOf(' ');
  return space < 0 ? payload : payload.slice(0, space);
}

interface AnnounceDeps extends ChangeDeps {
  waitMs: number;
}

/**
 * Drops the keys here at once and sends their notification on `q` (delivered when q's transaction commits);
 * the receipt's `applied`, called after the commit, waits for the other processes.
 */
export async function announce(deps: AnnounceDeps, payloads: string[], q: Queryable): Promise<Announced> {
  const { db, book, invalidate } = deps;
  for (const p of payloads) invalidate(p);
  // Each change is tagged: two changes of one wallet from one connection would otherwise share their
  // confirmations, and the second would count the first's as its own.
  const tag = randomBytes(6).toString('base64url');
  const tagged = payloads.map((p) => `${p} ${tag}`);
  let sender: number | undefined;
  for (const p of tagged) {
    const r = await q.query<{ pid: number }>('SELECT pg_notify($1, $2), pg_backend_pid() AS pid', [KEY_CHANNEL, p]);
    sender = Number(r.rows[0]?.pid);
  }
  const me = db.listenerPid?.();
  const others = payloads.length > 0 && db.listeners ? (await db.listeners(KEY_CHANNEL, q)).filter((pid) => pid !== me) : [];
  return {
    async applied() {
      // A lookup of this process that read the row before the commit may have cached it again meanwhile.
      for (const p of payloads) invalidate(p);
      await Promise.all(payloads.map((p) => written(deps, p)));
      if (others.length === 0 || sender === undefined) return;
      const missing = await book.wait(
        tagged.map((p) => `${sender} ${p}`),
        others,
        deps.waitMs,
      );
      if (missing.length > 0) {
        deps.warn({ keys: payloads, listeners: missing, waited_ms: deps.waitMs }, 'key change not confirmed by every gateway process');
      }
    },
  };
}
