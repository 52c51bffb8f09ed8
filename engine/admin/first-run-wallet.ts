// The first start on the embedded database, on an empty data folder: a wallet of development credits and its
// keys, printed once so a new operator can call the gateway at once (README "Start"), and the banner's lines for it.

import { type Actor, recordAudit } from '../audit/trail.ts';
import { creditsToNano, type DisplayCurrency, moneyText } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import type { KeyService } from '../keys/index.ts';
import type { Ledger } from '../money/types.ts';
import { creditsAdded } from './operator-audit.ts';

const DEV_CREDITS = 10_000_000;

const anyWallet = async (db: Db) => (await db.query('SELECT 1 FROM wallets LIMIT 1')).rows.length > 0;

const FIRST_RUN: Actor = { kind: 'operator', id: 'first_run', ip: null, userAgent: null };

async function createDevWallet(ledger: Ledger, keys: KeyService) {
  const wallet = await ledger.createWallet({
    credits: DEV_CREDITS,
    beside: (tx, made) => recordAudit(tx, FIRST_RUN, creditsAdded(made.walletId, made, DEV_CREDITS), new Date()),
  });
  const api = await keys.createApiKey(wallet.id, { name: 'development' });
  const management = await keys.createManagementKey(wallet.id, 'development', FIRST_RUN);
  return { walletId: wallet.id, apiKey: api.key, managementKey: management.key };
}

type DevWallet = Awaited<ReturnType<typeof createDevWallet>>;
export interface FirstRun {
  devWallet: DevWallet | null;
  noWallet: boolean;
}

/**
 * What a start finds on its database: an embedded one with no wallet gets the development wallet; a shared
 * PostgreSQL gets none (its wallets are the operator's to make), and `noWallet` has the banner say how.
 */
export async function firstRunWallet(db: Db, ledger: Ledger, keys: KeyService, embedded: boolean): Promise<FirstRun> {
  const firstRun = !(await anyWallet(db));
  const devWallet = embedded && firstRun ? await createDevWallet(ledger, keys) : null;
  return { devWallet, noWallet: firstRun && !devWallet };
}

/** The banner's lines for what firstRunWallet found: the development wallet's keys (shown once), or the first steps. */
export function firstRunBannerLines(found: FirstRun, currency: DisplayCurrency | null): string[] {
  const w = found.devWallet;
  const worth = moneyText(creditsToNano(DEV_CREDITS), currency, 'down');
  if (w) {
    return [
      `first run: created the development wallet ${w.walletId} with ${DEV_CREDITS.toLocaleString('en-US')} credits (${worth}). These keys are shown once:`,
      `  API key:        ${w.apiKey}`,
      `  management key: ${w.managementKey}`,
      `  dashboard:      npx gateway wallet sign-in-link ${w.walletId}   (prints a one-time sign-in link)`,
    ];
  }
  if (!found.noWallet) return [];
  // PostgreSQL makes no wallet by itself (it may serve many gateways): the operator's first steps, in order.
  return [
    'no wallet yet. Make one with credits, then an API key for it (with this DATABASE_URL set; the key is printed once):',
    `  npx gateway wallet create --credits ${DEV_CREDITS}      (${worth}; prints the wallet id)`,
    '  npx gateway key create <wallet-id>',
    '  npx gateway wallet sign-in-link <wallet-id>       (optional: its owner signs in to /dashboard)',
  ];
}
