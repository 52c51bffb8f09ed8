// A wallet's name (a school's name, such as 서울한빛중학교), given by the operator: POST /admin/v1/wallets
// {name}, PATCH /admin/v1/wallets/{id} {name}, `gateway wallet create --name` and `gateway wallet rename`.
// A rename is recorded in the wallet's audit trail with the name before and after, in its own transaction.

import { type Actor, recordAudit } from '../audit/trail.ts';
import { errors, hasUnpairedSurrogate } from '../core/errors.ts';
import type { Db } from '../db/db.ts';
import type { Wallet } from '../money/ledger.ts';
import { walletFromRow } from '../money/wallet-rows.ts';

const MAX_NAME = 100;

/** Control characters (line breaks, tabs, escapes) would break a CSV line and the page's header. */
const hasControl = (s: string) => [...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

/** A name as given (trimmed), null to leave or make the wallet unnamed; 400 naming `name` otherwise. */
export function walletNameOf(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  const name = typeof v === 'string' ? v.trim() : '';
  // A lone surrogate is not text: PostgreSQL refuses it.
  if (name === '' || name.length > MAX_NAME || hasControl(name) || hasUnpairedSurrogate(name)) {
    throw errors.invalidRequest(`name must be text of 1 to ${MAX_NAME} characters without line breaks, or null for none.`, 'name');
  }
  return name;
}

/** Gives the wallet `name` (null: none); 404 for an unknown wallet. Audited only when the name changes. */
export async function renameWallet(db: Db, walletId: string, name: string | null, actor: Actor, at: Date): Promise<Wallet> {
  return db.transaction(async (tx) => {
    const before = await tx.query<{ name: string | null }>('SELECT name FROM wallets WHERE id = $1 FOR UPDATE', [walletId]);
    const [row] = before.rows;
    if (!row) throw errors.notFound(`No wallet '${walletId}'.`);
    const r = await tx.query('UPDATE wallets SET name = $2 WHERE id = $1 RETURNING *', [walletId, name]);
    const previous = row.name ?? null;
    if (previous !== name) {
      await recordAudit(tx, actor, { walletId, action: 'wallet.renamed', targetId: null, before: { name: previous }, after: { name } }, at);
    }
    return walletFromRow(r.rows[0]!); // the row locked above
  });
}
