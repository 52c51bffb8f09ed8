// A batch's charge rows are grouped into one statement per writer, so a batch of leased calls writes its money,
// quota counts and usage records in one statement. A grouped write that fails cannot say whose row it was, so
// batcher.ts runs each charge again alone and only the charge at fault fails.

import type { ChargedItem, ChargeRows, ChargeRowWriter, Statement, TransferLookup } from '../db/charge-rows.ts';

/** One charge whose rows are due: who asked, what it writes, what it charged. */
export interface DueChargeRows<P> {
  owner: P;
  rows: ChargeRows;
  chargedNano: bigint;
  /** The charge's id: its draw id, or its reservation's. */
  transferId: string;
  /** The lease it is owed on, when its rows alone are written now (lease-records.ts). */
  leaseId?: string | undefined;
}

/** Whether a charge's rows record its id (a usage record does), so that it needs no draw row to be recognised. */
export const rowsRecordTransfer = (rows: ChargeRows | undefined): boolean =>
  rows?.some((r) => r.writer.transfersRecorded !== undefined) === true;

/** Charge rows that record a draw's id (one look per writer), and the instants between which they were written. */
export type RecordedDraws = { queries: readonly TransferLookup[]; since: Date; until: Date };

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * How the charges of `ops` already written are found by their rows: each writer's look, over a day either side of
 * the rows' own instants. A record's instant is its call's end, decided once before its first write, so a retry or
 * a spool replay finds it whenever, and on whichever process's clock, it runs (a window centred on the writing
 * process's now missed records written a day away and charged them again).
 */
export function recordedDraws(ops: readonly { rows?: ChargeRows | undefined }[]): RecordedDraws {
  const queries = new Set<TransferLookup>();
  let earliest = Number.POSITIVE_INFINITY;
  let latest = Number.NEGATIVE_INFINITY;
  for (const op of ops) {
    for (const { writer, item } of op.rows ?? []) {
      if (!writer.transfersRecorded) continue;
      const at = writer.transfersRecorded.at(item).getTime();
      if (!Number.isFinite(at)) throw new Error(`charge rows: a ${writer.name} row that records its charge has no instant`);
      queries.add(writer.transfersRecorded.look);
      earliest = Math.min(earliest, at);
      latest = Math.max(latest, at);
    }
  }
  if (queries.size === 0) return { queries: [], since: new Date(0), until: new Date(0) };
  return { queries: [...queries], since: new Date(earliest - DAY_MS), until: new Date(latest + DAY_MS) };
}

/** The statements of the due charges' rows, one per writer in name order. */
export function groupedStatements<P>(due: readonly DueChargeRows<P>[]): Statement[] {
  const groups = new Map<ChargeRowWriter<unknown>, ChargedItem<unknown>[]>();
  for (const d of due) {
    for (const { writer, item } of d.rows) {
      let items = groups.get(writer);
      if (!items) groups.set(writer, (items = []));
      items.push({ item, chargedNano: d.chargedNano, transferId: d.transferId, leaseId: d.leaseId });
    }
  }
  const ordered = [...groups].sort(([a], [b]) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return ordered.flatMap(([writer, items]) => writer.statement(items) ?? []);
}

/** Texts withCtes made, by their statements' shapes: a few shapes, each made once and the same string after. */
const texts = new Map<string, string>();
const MAX_TEXTS = 64;

/**
 * `sql` (a statement with `ownParams` parameters) with the charge rows' statements as CTEs of its
 * own before its first, their parameters renumbered after its own: one statement, one round trip.
 */
export function withCtes(sql: string, ownParams: number, chargeRows: readonly Statement[]): { sql: string; params: unknown[] } {
  if (chargeRows.length === 0) return { sql, params: [] };
  const params = chargeRows.flatMap((b) => b.params);
  const shape = `${sql}\u0000${chargeRows.map((b) => `${b.params.length}\u0000${b.sql}`).join('\u0000')}`;
  let text = texts.get(shape);
  if (text === undefined) {
    let next = ownParams;
    const ctes = chargeRows.map((b, i) => {
      const offset = next;
      next += b.params.length;
      return `charge_rows_${i} AS (${b.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
    });
    const own = sql.replace(/^\s*WITH\s+/, '');
    text = own === sql ? `WITH ${ctes.join(',\n')}\n${sql}` : `WITH ${ctes.join(',\n')},\n${own}`;
    if (texts.size < MAX_TEXTS) texts.set(shape, text);
  }
  return { sql: text, params };
}
