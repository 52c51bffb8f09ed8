// last_used_at, written in batches: authenticate() notes the instant in memory and a timer writes all pending
// instants in one UPDATE every `flushMs`; stop() writes what is left. Records merge `pending` so they show a use
// at once.

import type { Db } from '../db/db.ts';
import { jsonTable } from '../db/json-rows.ts';
import { lockKeys } from './key-use.ts';

const KEY_USED = jsonTable('id text, at timestamptz');

export class LastUsedBatch {
  private readonly pendingUse = new Map<string, Date>();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly db: Db,
    flushMs: number,
  ) {
    this.timer = setInterval(() => {
      this.flush().catch(() => undefined);
    }, flushMs);
    this.timer.unref?.();
  }

  note(keyId: string, at: Date): void {
    this.pendingUse.set(keyId, at);
  }

  pending(keyId: string): Date | undefined {
    return this.pendingUse.get(keyId);
  }

  async flush(): Promise<void> {
    if (this.pendingUse.size === 0) return;
    const batch = [...this.pendingUse.entries()].map(([id, at]) => ({ id, at }));
    this.pendingUse.clear();
    // The rows locked in id order first, as a capped reserve locks its keys (key-use.ts, lockKeys): an update
    // of several keys in another order could deadlock with a batch holding some of them.
    await this.db.transaction(async (tx) => {
      await lockKeys(
        tx,
        batch.map((b) => b.id),
      );
      await tx.query(
        `UPDATE api_keys SET last_used_at = GREATEST(COALESCE(last_used_at, u.at), u.at)
           FROM ${KEY_USED.from('$1', 'u')}
          WHERE api_keys.id = u.id`,
        [KEY_USED.json(batch.map((b) => [b.id, b.at]))],
      );
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch(() => undefined);
  }
}
