// Whose turn it is to audit the ledger: an audit reads the whole journal, so the processes of a service take
// turns (docs/decisions/ledger-audit.md, "Taking turns").
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Queryable } from '../db/db.ts';
import type { AuditTurn, LedgerAuditRun } from './audit.ts';

/** The turn falls due after this share of the interval, so timer drift never skips a lone process's audit. */
const DUE_AFTER_SHARE = 0.9;

type Published = Omit<LedgerAuditRun, 'at'> & { at: string };

export function databaseAuditTurn(db: Queryable): AuditTurn {
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  return {
    async take(intervalMs) {
      const r = await db.query(
        `UPDATE ledger_audit_turn SET next_at = clock_timestamp() + $1::bigint * interval '1 millisecond', taken_by = $2
          WHERE id = 1 AND next_at <= clock_timestamp() RETURNING id`,
        [Math.round(intervalMs * DUE_AFTER_SHARE), owner],
      );
      return r.rows.length === 1;
    },
    async publish(run) {
      const published: Published = { ...run, at: run.at.toISOString() };
      await db.query('UPDATE ledger_audit_turn SET last_run = $1::jsonb WHERE id = 1', [JSON.stringify(published)]);
    },
    async latest() {
      const r = await db.query<{ last_run: Published | string | null }>('SELECT last_run FROM ledger_audit_turn WHERE id = 1', []);
      const raw = r.rows[0]?.last_run ?? null;
      if (raw === null) return null;
      const published = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Published;
      return { ...published, at: new Date(published.at) };
    },
  };
}
