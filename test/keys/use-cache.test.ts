// A limited key's use as one process knows it (engine/keys/use-cache.ts): read once, kept by the charges this
// process commits, refreshed in the background, never counting a charge twice.
import { describe, expect, it } from 'vitest';
import { type KeyUsage, KeyUseCache } from '../../engine/keys/use-cache.ts';

const now = new Date('2026-12-15T03:00:00Z'); // 12:00 KST, 15 December
const nextDay = new Date('2026-12-15T15:00:00Z'); // 00:00 KST, 16 December

/** The database's counters of one key, and the reads made of them; a read can be held open to race with charges. */
function counters() {
  const db: KeyUsage = { dayNano: 0n, monthNano: 0n };
  const reads: Date[] = [];
  let gate: Promise<void> | null = null;
  return {
    db,
    reads,
    hold() {
      let open!: () => void;
      gate = new Promise((r) => (open = r));
      return () => {
        gate = null;
        open();
      };
    },
    read: async (_keyId: string, at: Date): Promise<KeyUsage> => {
      reads.push(at);
      const snapshot = { ...db }; // what the read sees is fixed when it runs, whatever commits while it travels back
      if (gate) await gate;
      return snapshot;
    },
    commit(nano: bigint) {
      db.dayNano += nano;
      db.monthNano += nano;
    },
  };
}

const settle = () => new Promise((r) => setImmediate(r));

describe("a key's use, kept in memory", () => {
  it('reads once, then counts the charges of this process without reading', async () => {
    const c = counters();
    const cache = new KeyUseCache({ read: c.read, ttlMs: 60_000 });
    c.commit(5n);
    expect(await cache.get('k', now)).toEqual({ dayNano: 5n, monthNano: 5n });
    for (let i = 0; i < 3; i++) {
      const token = cache.token('k');
      c.commit(10n);
      cache.note('k', 10n, now, token);
    }
    expect(await cache.get('k', now)).toEqual({ dayNano: 35n, monthNano: 35n });
    expect(c.reads).toHaveLength(1);
  });

  it('a charge whose commit raced with a read is not counted twice, and the next check reads it', async () => {
    const c = counters();
    const cache = new KeyUseCache({ read: c.read, ttlMs: 0 });
    await cache.get('k', now);
    const token = cache.token('k'); // the call's charge is handed over…
    const open = c.hold();
    await cache.get('k', now); // …a check starts a read in the background…
    c.commit(10n); // …the charge commits (the read saw the counters before it)…
    open();
    await settle(); // …the read ends…
    cache.note('k', 10n, now, token); // …and the charge's commit is noted: it may or may not be in the read
    expect(c.reads).toHaveLength(2);
    // Not added (it could have been in the read, and would count twice): the next check reads first.
    expect(await cache.get('k', now)).toEqual({ dayNano: 10n, monthNano: 10n });
  });

  it("a read never lowers the figure, and shows other processes' use", async () => {
    const c = counters();
    const cache = new KeyUseCache({ read: c.read, ttlMs: 0 });
    await cache.get('k', now);
    const open = c.hold();
    const token = cache.token('k');
    await cache.get('k', now); // a read sees 0…
    c.commit(7n);
    cache.note('k', 7n, now, token); // …our charge is noted before the read ends
    open();
    await settle();
    expect((await cache.get('k', now)).dayNano).toBe(7n);
    await settle();
    c.commit(100n); // another process's charge: the next check answers at once and reads it in the background
    expect((await cache.get('k', now)).dayNano).toBe(7n);
    await settle();
    expect((await cache.get('k', now)).dayNano).toBe(107n);
  });

  it('a new Korean day is read before it is answered; the month carries over', async () => {
    const c = counters();
    const cache = new KeyUseCache({
      read: async (k, at) => ({ ...(await c.read(k, at)), dayNano: at === nextDay ? 0n : c.db.dayNano }),
      ttlMs: 60_000,
    });
    c.commit(9n);
    await cache.get('k', now);
    expect(await cache.get('k', nextDay)).toEqual({ dayNano: 0n, monthNano: 9n });
    expect(c.reads).toEqual([now, nextDay]);
    // A charge that finished on the day before counts on its month, not on the new day.
    cache.note('k', 4n, now, cache.token('k'));
    expect(await cache.get('k', nextDay)).toEqual({ dayNano: 0n, monthNano: 13n });
  });

  it('use written another way is read again at the next check', async () => {
    const c = counters();
    const cache = new KeyUseCache({ read: c.read, ttlMs: 60_000 });
    await cache.get('k', now);
    c.commit(3n);
    cache.forget('k');
    expect((await cache.get('k', now)).dayNano).toBe(3n);
  });

  it('checks at once share one read', async () => {
    const c = counters();
    const cache = new KeyUseCache({ read: c.read, ttlMs: 60_000 });
    await Promise.all([cache.get('k', now), cache.get('k', now), cache.get('k', now)]);
    expect(c.reads).toHaveLength(1);
  });
});
