// Charges the database has not taken, kept on this host's disk so a killed process has not answered for free; the
// next process on the data folder writes them (docs/decisions/charge-writer.md, "The spool").
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { privateDir } from '../core/private-dir.ts';
import type { ChargeRows, ChargeRowWriter } from '../db/charge-rows.ts';

/** What a charge is, written so that another process can write it again. */
export interface ChargeIntent {
  callId: string;
  kind: 'settle' | 'draw';
  /** The reservation the charge posts against: the call's own hold, or its lease. */
  reservationId: string;
  costNano: bigint;
  /** A draw's id (its call's); a settle is known by its reservation's. */
  drawId?: string;
  holdAtMostNano?: bigint | undefined;
  rows?: ChargeRows | undefined;
}

/** A draw on a lease as the spool keeps it: the next process writes it against the same lease. */
export const drawIntent = (
  reservationId: string,
  costNano: bigint,
  drawId: string,
  rows: ChargeRows | undefined,
  holdAtMostNano?: bigint,
): ChargeIntent => ({ callId: drawId, kind: 'draw', reservationId, costNano, drawId, holdAtMostNano, rows });

/** Lines one spool file is read for at most: far above what a day of retries can leave. */
const MAX_LINES = 1_000_000;

/** Times a line is written again when the file was taken meanwhile by a replay that judged its owner dead. */
const MAX_REWRITES = 3;

/**
 * One process's spool file: `<dir>/<host>~<pid>~<random>.jsonl`, so the next process can tell whose it was. Each line
 * is appended by path, never through a descriptor kept open: a replay takes a file by renaming it first, and a
 * process judged dead by mistake (frozen past its holds' life) then keeps its next charges in a new file, not in
 * one already read.
 */
export class ChargeSpool {
  private waiting = 0;
  private readonly stem: string;
  private readonly file: string;

  constructor(
    private readonly dir: string,
    owner: string,
  ) {
    this.stem = spoolStem(owner);
    this.file = join(dir, `${this.stem}.jsonl`);
  }

  /** Keeps the intent on disk (written and flushed) before returning. */
  keep(intent: ChargeIntent): void {
    privateDir(this.dir);
    this.append(`${encodeIntent(intent)}\n`, true);
    this.waiting++;
  }

  /** Appends `line`; again when the file was renamed away before the line was known written in it (twice is a no-op). */
  private append(line: string, flush: boolean): void {
    for (let attempt = 0; attempt < MAX_REWRITES; attempt++) {
      const fd = openSync(this.file, 'a');
      try {
        writeSync(fd, line);
        if (flush) fsyncSync(fd);
        if (stillAt(fd, this.file)) return;
      } finally {
        closeSync(fd);
      }
    }
    throw new Error(`charge spool: ${this.file} was taken ${MAX_REWRITES} times while a line was written to it`);
  }

  /** Why charges could not be kept here (the folder cannot be made or written), or null when they can. */
  unwritable(): string | null {
    try {
      privateDir(this.dir);
      accessSync(this.dir, constants.W_OK);
      return null;
    } catch (e) {
      return (e as Error).message;
    }
  }

  /** The kept charge landed (or was refused for good): once none waits, the file goes. */
  landed(callId: string): void {
    if (this.waiting === 0) return;
    this.waiting--;
    try {
      if (this.waiting > 0) this.append(`${JSON.stringify({ landed: callId })}\n`, false);
      else for (const f of readdirSync(this.dir)) if (ownerStemOf(f) === this.stem) rmSync(join(this.dir, f), { force: true });
    } catch {
      // A landed line only spares a replay a write that would move nothing: the charge is keyed by its id.
    }
  }

  /**
   * Writes again the charges that dead processes left in the folder; resolves with how many it wrote. `holding`
   * names (as spoolStem does) the owners with a hold still held, which a live process renews; `written` gives back
   * what an owner's kept charges held once they are all written, and only then do its files go: a process killed
   * between the two leaves the files, whose next replay moves nothing again and gives the holds back.
   */
  async replay(
    writers: readonly ChargeRowWriter<unknown>[],
    write: (intent: ChargeIntent) => Promise<void>,
    holding: () => Promise<ReadonlySet<string>> = async () => new Set(),
    written: (ownerStem: string) => Promise<unknown> = async () => undefined,
  ): Promise<number> {
    const byName = new Map(writers.map((w) => [w.name, w]));
    let count = 0;
    let failed: unknown = null;
    // Per owner, the files taken whose charges were all written; null once one of its charges failed.
    const done = new Map<string, string[] | null>();
    for (const f of await this.dueFiles(holding)) {
      const taken = this.take(f);
      if (taken === null) continue; // another replay took it first
      let text: string;
      try {
        text = readFileSync(taken, 'utf8');
      } catch {
        continue; // another replay took it from this one between the rename and the read
      }
      const r = await writeEach(waitingIn(text, byName), write);
      count += r.count;
      failed ??= r.failed;
      const owner = ownerStemOf(f);
      const sofar = done.get(owner);
      done.set(owner, r.failed === null && sofar !== null ? [...(sofar ?? []), taken] : null);
    }
    for (const [owner, taken] of done) {
      if (taken === null) continue; // its files stay for the next try (the charges written are no-ops then)
      try {
        await written(owner);
      } catch (e) {
        failed ??= e;
        continue;
      }
      for (const t of taken) rmSync(t, { force: true });
    }
    if (failed !== null) throw failed;
    return count;
  }

  /** The files of other owners to replay now: a dead process's of this host at once, any other once it holds no hold. */
  private async dueFiles(holding: () => Promise<ReadonlySet<string>>): Promise<string[]> {
    let files: string[];
    try {
      // Its own files, taken by a replay or not, hold what its writer still retries.
      files = readdirSync(this.dir).filter((f) => f.endsWith('.jsonl') && ownerStemOf(f) !== this.stem);
    } catch {
      return []; // no spool folder: nothing was ever kept
    }
    const died = new Set(files.filter(diedOnThisHost));
    const held = died.size < files.length ? await holding() : new Set<string>();
    return files.filter((f) => died.has(f) || !held.has(ownerStemOf(f)));
  }

  /** Renames the file before reading it, still under its owner's name (a failed replay leaves it for the next). */
  private take(file: string): string | null {
    const taken = join(this.dir, `${ownerStemOf(file)}~taken-${randomBytes(4).toString('hex')}.jsonl`);
    try {
      renameSync(join(this.dir, file), taken);
      return taken;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }
}

/** Writes each intent in order; one that fails does not stop the others (the first failure is returned). */
async function writeEach(intents: readonly ChargeIntent[], write: (intent: ChargeIntent) => Promise<void>) {
  let count = 0;
  let failed: unknown = null;
  for (const intent of intents) {
    try {
      await write(intent);
      count++;
    } catch (e) {
      failed ??= e;
    }
  }
  return { count, failed };
}

/** Whether the descriptor's file is still the one at `path` (a replay renames a file it takes). */
function stillAt(fd: number, path: string): boolean {
  try {
    const open = fstatSync(fd);
    const named = statSync(path);
    return open.ino === named.ino && open.dev === named.dev;
  } catch {
    return false;
  }
}

/** The owner's part of a spool file's name: `<host>~<pid>~<random>`, less what a replay that took it added. */
const ownerStemOf = (file: string): string =>
  file
    .replace(/\.jsonl$/, '')
    .split('~')
    .slice(0, 3)
    .join('~');

/** An owner id as its spool file is named (`<host>~<pid>~<random>`). */
export const spoolStem = (owner: string): string =>
  owner
    .split(':')
    .map((part) => part.replace(/[^\w.-]/g, '_'))
    .join('~');

/**
 * Whether the file's process ran on this host and is gone: its pid answers no more, or is this process's own (a
 * container's earlier life). Its charges are written at once. Any other file (another host's, copied in or on a
 * shared folder; a pid that answers, maybe reused) is its process's while that process holds a hold: a live one
 * renews its holds, a dead one's lapse within their life. Replaying a live process's charge could race its first
 * write of it, which looks for no earlier one.
 */
function diedOnThisHost(file: string): boolean {
  const [host, pidText] = file.split('~');
  if (host !== spoolStem(hostname()) || !/^\d+$/.test(pidText ?? '')) return false;
  const pid = Number(pidText);
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0); // signal 0 asks without touching it
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'EPERM';
  }
}

/** The intents of a spool file that no later line says landed, in the order they were kept. */
function waitingIn(text: string, writers: ReadonlyMap<string, ChargeRowWriter<unknown>>): ChargeIntent[] {
  const intents = new Map<string, ChargeIntent>();
  const lines = text.split('\n', MAX_LINES);
  for (const line of lines) {
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line, revive);
    } catch {
      continue; // a line cut by the kill: its charge was not yet kept
    }
    const landed = (parsed as { landed?: unknown }).landed;
    if (typeof landed === 'string') intents.delete(landed);
    else {
      const intent = decodeIntent(parsed as EncodedIntent, writers);
      intents.set(intent.callId, intent);
    }
  }
  return [...intents.values()];
}

type EncodedIntent = Omit<ChargeIntent, 'rows'> & { rows?: { writer: string; item: unknown }[] | undefined };

function encodeIntent(intent: ChargeIntent): string {
  const encoded: EncodedIntent = { ...intent, rows: intent.rows?.map((r) => ({ writer: r.writer.name, item: r.item })) };
  return JSON.stringify(encoded, function (this: Record<string, unknown>, key: string, value: unknown) {
    const raw = this[key];
    if (typeof raw === 'bigint') return { $bigint: raw.toString() };
    if (raw instanceof Date) return { $date: raw.toISOString() };
    return value;
  });
}

function decodeIntent(e: EncodedIntent, writers: ReadonlyMap<string, ChargeRowWriter<unknown>>): ChargeIntent {
  // A row whose writer this version does not have is left out: the charge matters more than its record.
  const rows = e.rows?.flatMap((r) => {
    const writer = writers.get(r.writer);
    return writer ? [{ writer, item: r.item }] : [];
  });
  return { ...e, rows };
}

function revive(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object') {
    const v = value as { $bigint?: unknown; $date?: unknown };
    if (typeof v.$bigint === 'string' && Object.keys(v).length === 1) return BigInt(v.$bigint);
    if (typeof v.$date === 'string' && Object.keys(v).length === 1) return new Date(v.$date);
  }
  return value;
}
