// The ledger rows this process last committed, per wallet, so a batch of charges can be decided without reading its
// rows first (docs/money.md, "One round trip when this process wrote the rows last"). A wrong memory costs a round
// trip, never money: batch-sql.ts `expectRows` checks every row the decisions read, under their locks, before the write.
import { LRUCache } from 'lru-cache';
import type { Pending } from './batch-queues.ts';
import { Book, type LotState, looksForEarlierWrite, type ResState } from './policy.ts';

/** Wallets remembered at most, and held reservations per wallet (past it the wallet is forgotten). */
const MAX_WALLETS = 4_096;
const MAX_HELD_PER_WALLET = 4_096;
/** After another writer changed a wallet's rows, its batches read their rows first for this long. */
const SHARED_MS = 5_000;

/** What a batch decided from memory assumes, in the shape `expectRows` checks. */
export interface Expected {
  walletIds: string[];
  reservationIds: string[];
  /** `id:available:reserved:expiry:vendors` of every live lot of the wallets. */
  lots: string[];
  /** `id:state:amount:charged:wallet:vendor` of every reservation the batch finishes. */
  reservations: string[];
  /** `reservation:lot:amount` of what those reservations hold, per lot. */
  holds: string[];
  /** Which remembering of each wallet the batch was decided on. */
  seen: Map<string, number>;
}

interface WalletRows {
  lots: LotState[];
  held: Map<string, ResState>;
  version: number;
}

const live = (l: LotState) => l.avail > 0n || l.reserved > 0n;
const lotCopy = (l: LotState): LotState => ({ ...l });
const resCopy = (r: ResState): ResState => ({ ...r, held: new Map(r.held) });
/** Every column of a lot the decisions read: its balances, its expiry ('' for none), its vendors ('*': all). */
const lotSignature = (l: LotState) =>
  `${l.id}:${l.avail}:${l.reserved}:${l.expiresAt ? l.expiresAt.toISOString() : ''}:${l.vendors === null ? '*' : l.vendors.join(',')}`;
const resSignature = (r: ResState) => `${r.id}:${r.state}:${r.amount}:${r.charged}:${r.walletId}:${r.vendor}`;
const holdSignatures = (r: ResState) => [...r.held].filter(([, n]) => n > 0n).map(([lotId, n]) => `${r.id}:${lotId}:${n}`);

export class KnownRows {
  private readonly wallets = new LRUCache<string, WalletRows>({ max: MAX_WALLETS });
  private readonly shared = new LRUCache<string, true>({ max: MAX_WALLETS, ttl: SHARED_MS });
  private versions = 0;
  /** This process's batches running, per wallet they name. */
  private readonly running = new Map<string, number>();

  /** A batch of `ops` starts; the function returned says it ended, after its commit was remembered (or not). */
  enter(ops: readonly Pending[]): () => void {
    const walletIds = [...new Set(ops.flatMap((p) => (p.op.walletId === null ? [] : [p.op.walletId])))];
    for (const w of walletIds) this.running.set(w, (this.running.get(w) ?? 0) + 1);
    return () => {
      for (const w of walletIds) {
        const n = this.running.get(w)! - 1;
        if (n > 0) this.running.set(w, n);
        else this.running.delete(w);
      }
    };
  }

  /**
   * A Book over the remembered rows, or null when the batch must read its rows: it reserves (a reserve reads keys and
   * wallet facts too), expires or trims, retries a draw (which looks for its earlier write), or names a wallet or a
   * reservation not remembered.
   */
  bookFor(batch: readonly Pending[], now: Date): { book: Book; expected: Expected } | null {
    const reservations = new Map<string, ResState>();
    const walletIds = new Set<string>();
    for (const { op } of batch) {
      if (op.kind !== 'settle' && op.kind !== 'release' && op.kind !== 'draw') return null;
      if (looksForEarlierWrite(op) || op.walletId === null || this.shared.has(op.walletId)) return null;
      const held = this.wallets.get(op.walletId)?.held.get(op.id);
      if (!held) return null;
      reservations.set(op.id, resCopy(held));
      walletIds.add(op.walletId);
    }
    const known = [...walletIds].map((w) => [w, this.wallets.get(w)!] as const);
    const lots = known.flatMap(([, rows]) => rows.lots.map(lotCopy));
    const expected: Expected = {
      walletIds: [...walletIds],
      reservationIds: [...reservations.keys()],
      lots: lots.map(lotSignature),
      reservations: [...reservations.values()].map(resSignature),
      holds: [...reservations.values()].flatMap(holdSignatures),
      seen: new Map(known.map(([w, rows]) => [w, rows.version])),
    };
    return { book: new Book(lots, reservations, new Map(), now), expected };
  }

  /** After the batch of `book` committed: every live lot of `walletIds`, and their reservations still held. */
  remember(book: Book, walletIds: Iterable<string>): void {
    const { lots, reservations } = book.rows();
    for (const walletId of walletIds) {
      const known = this.wallets.get(walletId)?.held ?? new Map<string, ResState>();
      const rows = { lots: lots.filter((l) => l.walletId === walletId && live(l)).map(lotCopy), held: known, version: ++this.versions };
      for (const r of reservations.values()) {
        if (r.walletId !== walletId) continue;
        if (r.state === 'held') known.set(r.id, resCopy(r));
        else known.delete(r.id);
      }
      if (known.size > MAX_HELD_PER_WALLET) this.wallets.delete(walletId);
      else this.wallets.set(walletId, rows);
    }
  }

  /** After a batch of the wallets failed: what it may have left is unknown. */
  forget(walletIds: Iterable<string | null>): void {
    for (const walletId of walletIds) if (walletId !== null) this.wallets.delete(walletId);
  }

  /**
   * After a batch decided from memory found its rows changed. A wallet this process remembered again meanwhile was
   * changed by its own other batch, and the batch is decided again on that. So was one while another of its batches
   * runs (a wallet's draws and its lease's moves run side by side), whose commit may not be remembered yet: the batch
   * reads the rows. Otherwise another writer was first, and the wallet's batches read their rows for a while.
   */
  stale(expected: Expected): void {
    for (const [walletId, version] of expected.seen) {
      if (this.wallets.get(walletId)?.version !== version) continue;
      this.wallets.delete(walletId);
      if ((this.running.get(walletId) ?? 0) <= 1) this.shared.set(walletId, true);
    }
  }
}
