// The first start on the embedded database, on an empty data folder: a wallet of development credits and its
// keys, printed once so a new operator can call the gateway at once (README "Start").
import type { Db } from '../db/db.ts';
import type { KeyService } from '../keys/index.ts';
import type { Ledger } from '../money/types.ts';

const DEV_CREDITS = 10_000_000; // $10

export const anyWallet = async (db: Db) => (await db.query('SELECT 1 FROM wallets LIMIT 1')).rows.length > 0;

export async function createDevWallet(ledger: Ledger, keys: KeyService) {
  const wallet = await ledger.createWallet({ credits: DEV_CREDITS });
  const api = await keys.createApiKey(wallet.id, { name: 'development' });
  const management = await keys.createManagementKey(wallet.id, 'development', {
    kind: 'operator',
    id: 'first_run',
    ip: null,
    userAgent: null,
  });
  return { walletId: wallet.id, apiKey: api.key, managementKey: management.key };
}
