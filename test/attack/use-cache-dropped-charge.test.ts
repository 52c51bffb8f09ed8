// Attack (use-cache.ts, d819fbd), one process: a charge handed over on figure N, whose commit comes after a
// background read N+1 that started and ended in between (another call of the key checked it), is dropped by
// `note` (token N is no longer the figure's read) and is not in read N+1 either (it ran before the commit). The
// charge's answer has been given (it waits for the commit); the same client's next call, sent after it, is then
// checked against a figure without that charge until the next read, up to `ttlMs` (1 s) later. A key at its daily
// limit admits calls sent after its last answer.
// Measured on one `npm start` (PostgreSQL, leases on), 32 at once, 324-credit calls: up to 14 calls sent after an
// answer had shown the limit reached, and 46 calls past the limit (HEAD~2, same runs: 0 such calls, 18 to 21 past).
// At fault: engine/keys/use-cache.ts `note` (a dropped charge leaves the figure looking fresh: `readAtMs` stays,
// so `get` answers from it without reading).
import { expect, it } from 'vitest';
import { type KeyUsage, KeyUseCache } from '../../engine/keys/use-cache.ts';

const now = new Date('2026-12-15T03:00:00Z');
const settle = () => new Promise((r) => setImmediate(r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it("a committed charge of this process is in the key's next check, whichever read ran before its commit", async () => {
  const db: KeyUsage = { dayNano: 0n, monthNano: 0n };
  const cache = new KeyUseCache({ read: async () => ({ ...db }), ttlMs: 1_000 });
  await cache.get('k', now); // the key's first call: read, 0 used
  await sleep(1_050); // the figure is now due for a refresh
  const token = cache.token('k'); // call X ends; its charge (the whole day's limit, 10) is handed over…
  await cache.get('k', now); // …another call of the key is checked: a background read starts…
  await settle(); // …and ends before X's charge commits (it does not see it)
  db.dayNano += 10n; // X's charge commits…
  db.monthNano += 10n;
  cache.note('k', 10n, now, token); // …and is noted; X's answer ends
  // X's client sends its next call: the day's use is 10, and this process committed all of it.
  expect((await cache.get('k', now)).dayNano).toBe(10n);
});
