// Several gateway processes on one database: concurrent reservations from two processes never overspend,
// and a reservation whose process was killed is released by the sweeper after its expiry.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { loadMigrations, migrate } from '../../engine/db/migrate.ts';
import { openDatabase } from '../../engine/db/open.ts';
import { openPg } from '../../engine/db/pg.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';

const CHILD = join(process.cwd(), 'test/fixtures/ledger-child.ts');

interface Child {
  proc: ChildProcessWithoutNullStreams;
  next(event: string): Promise<Record<string, unknown>>;
  send(line: string): void;
  exited: Promise<number | null>;
}

function startChild(env: Record<string, string>): Child {
  // One process (no tsx wrapper), so SIGKILL kills the very process that holds the reservation.
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const events: Record<string, unknown>[] = [];
  const waiters: { event: string; resolve: (e: Record<string, unknown>) => void }[] = [];
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  createInterface({ input: proc.stdout }).on('line', (line) => {
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line);
    } catch {
      return;
    }
    const i = waiters.findIndex((w) => w.event === e.event);
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(e);
    else events.push(e);
  });
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return {
    proc,
    exited,
    send: (line) => proc.stdin.write(`${line}\n`),
    next: (event) =>
      new Promise((resolve, reject) => {
        const i = events.findIndex((e) => e.event === event);
        if (i >= 0) return resolve(events.splice(i, 1)[0]!);
        waiters.push({ event, resolve });
        exited.then((code) => reject(new Error(`child exited (${code}) before '${event}': ${stderr.slice(-2000)}`)));
      }),
  };
}

const pgOk = postgresAvailability.ok || REQUIRE_POSTGRES;
if (!postgresAvailability.ok && !REQUIRE_POSTGRES)
  console.warn(`[ledger.processes] skipping PostgreSQL part: ${postgresAvailability.reason}`);

describe.skipIf(!pgOk)('ledger across processes [postgres]', () => {
  let pg: TestPostgres | undefined;
  const children: Child[] = [];
  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    await pg?.cleanup();
  });

  it('two processes starting at once migrate once', async () => {
    const fresh = await openTestPostgres({ migrate: false });
    try {
      const other = await openPg({ url: fresh.url });
      const [a, b] = await Promise.all([migrate(fresh.db), migrate(other)]);
      await other.close();
      expect([a.length, b.length].sort()).toEqual([0, loadMigrations().length]);
      const n = await fresh.db.query<{ n: string }>('SELECT count(*) AS n FROM schema_migrations');
      expect(Number(n.rows[0]!.n)).toBe(a.length + b.length);
    } finally {
      await fresh.cleanup();
    }
  });

  it('two gateway processes reserving concurrently do not overspend', async () => {
    pg = await openTestPostgres();
    const ledger = createLedger(pg.db, { clock: systemClock });
    const w = await ledger.createWallet({ credits: 0 });
    await ledger.topUp(w.id, { nano: 17_000n });
    await ledger.topUp(w.id, { nano: 13_000n, vendors: ['a'] }); // 30 reservations of 1,000 in all
    const env = { DATABASE_URL: pg.url, WALLET_ID: w.id, MODE: 'race', COUNT: '40', AMOUNT_NANO: '1000', SETTLE_NANO: '600' };
    const a = startChild(env);
    const b = startChild(env);
    children.push(a, b);
    await Promise.all([a.next('ready'), b.next('ready')]);
    a.send('go');
    b.send('go');
    const [ra, rb] = await Promise.all([a.next('reserved'), b.next('reserved')]);
    expect(Number(ra.ok) + Number(rb.ok)).toBe(30);
    expect(Number(ra.refused) + Number(rb.refused)).toBe(50);
    let bal = await ledger.balance(w.id);
    expect(bal.availableNano).toBe(0n);
    expect(bal.reservedNano).toBe(30_000n);
    a.send('settle');
    b.send('settle');
    const [sa, sb] = await Promise.all([a.next('settled'), b.next('settled')]);
    expect(BigInt(sa.charged as string) + BigInt(sb.charged as string)).toBe(18_000n);
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    const { sum } = await expectJournalAddsUp(pg.db, w.id);
    bal = await ledger.balance(w.id);
    expect(bal.availableNano).toBe(12_000n);
    expect(bal.reservedNano).toBe(0n);
    expect(sum.chargedNano).toBe(18_000n);
  }, 60_000);

  it('a process killed before settle: the sweeper releases its reservation after expiry', async () => {
    pg ??= await openTestPostgres();
    const ledger = createLedger(pg.db, { clock: systemClock });
    const w = await ledger.createWallet({ credits: 10 });
    const child = startChild({ DATABASE_URL: pg.url, WALLET_ID: w.id, MODE: 'crash', AMOUNT_NANO: '4000', TTL_MS: '30000' });
    children.push(child);
    const r = await child.next('reserved');
    expect(r.ok).toBe(true);
    child.proc.kill('SIGKILL');
    await child.exited;
    let bal = await ledger.balance(w.id);
    expect(bal.availableNano).toBe(6_000n);
    expect(bal.reservedNano).toBe(4_000n);
    // not yet expired: the sweeper leaves it
    expect(await ledger.sweepExpired(new Date())).toBe(0);
    // after its expiry
    expect(await ledger.sweepExpired(new Date(Date.now() + 31_000))).toBe(1);
    bal = await ledger.balance(w.id);
    expect(bal.availableNano).toBe(10_000n);
    expect(bal.reservedNano).toBe(0n);
    const row = await pg.db.query<{ state: string; owner: string }>('SELECT state, owner FROM reservations WHERE id = $1', [r.id]);
    expect(row.rows[0]!.state).toBe('expired');
    expect(row.rows[0]!.owner).toMatch(/^child-/);
    await expectJournalAddsUp(pg.db, w.id);
  }, 60_000);
});

describe('ledger after a crash [pglite data dir]', () => {
  it('a reservation held by a killed process is released after expiry when the data dir is reopened', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-ledger-'));
    try {
      let db = await openDatabase({ dataDir: dir });
      let ledger = createLedger(db, { clock: systemClock });
      const w = await ledger.createWallet({ credits: 10 });
      await db.close();
      const child = startChild({
        GATEWAY_DATA_DIR: dir,
        DATABASE_URL: '',
        WALLET_ID: w.id,
        MODE: 'crash',
        AMOUNT_NANO: '4000',
        TTL_MS: '30000',
      });
      const r = await child.next('reserved');
      expect(r.ok).toBe(true);
      child.proc.kill('SIGKILL');
      await child.exited;
      db = await openDatabase({ dataDir: dir });
      ledger = createLedger(db, { clock: systemClock });
      expect((await ledger.balance(w.id)).reservedNano).toBe(4_000n);
      expect(await ledger.sweepExpired(new Date(Date.now() + 31_000))).toBe(1);
      const bal = await ledger.balance(w.id);
      expect(bal.availableNano).toBe(10_000n);
      expect(bal.reservedNano).toBe(0n);
      await expectJournalAddsUp(db, w.id);
      await db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
