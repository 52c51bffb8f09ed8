// `gateway wallet create|topup|show` and `gateway management-key create`: argv in, JSON out.
import { parseArgs } from 'node:util';
import { walletCreate, walletShow, walletTopup } from './wallet-commands.ts';
import { systemClock } from '../core/clock.ts';
import { openDatabase } from '../db/open.ts';
import { isGatewayError } from '../core/errors.ts';
import { createKeyService } from '../keys/index.ts';

const OPTIONS = {
  credits: { type: 'string' },
  'splits-usage': { type: 'boolean' },
  'key-slots': { type: 'string' },
  owner: { type: 'string' },
  vendors: { type: 'string' },
  name: { type: 'string' },
} as const;

export async function runWalletCommand(group: string, command: string | undefined, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const db = await openDatabase({ url: process.env.DATABASE_URL, dataDir: process.env.GATEWAY_DATA_DIR ?? './data' });
  try {
    const out = await run(group, command, positionals[0], values, db);
    console.log(JSON.stringify(out, null, 2));
    return 0;
  } catch (e) {
    console.error(isGatewayError(e) ? `${e.type}: ${e.message}` : (e as Error).message);
    return 1;
  } finally {
    await db.close();
  }
}

async function run(
  group: string,
  command: string | undefined,
  walletId: string | undefined,
  values: { credits?: string; 'splits-usage'?: boolean; 'key-slots'?: string; owner?: string; vendors?: string; name?: string },
  db: Awaited<ReturnType<typeof openDatabase>>,
): Promise<unknown> {
  const need = () => {
    if (!walletId) throw new Error(`usage: gateway ${group} ${command} <wallet-id>`);
    return walletId;
  };
  if (group === 'wallet' && command === 'create') {
    return walletCreate(db, { credits: values.credits, splitsUsage: values['splits-usage'], keySlots: values['key-slots'], ownerId: values.owner });
  }
  if (group === 'wallet' && command === 'topup') {
    if (!values.credits) throw new Error('usage: gateway wallet topup <wallet-id> --credits N [--vendors c,d]');
    return walletTopup(db, need(), { credits: values.credits, vendors: values.vendors });
  }
  if (group === 'wallet' && command === 'show') return walletShow(db, need());
  if (group === 'management-key' && command === 'create') {
    const keys = createKeyService(db, { clock: systemClock });
    try {
      return await keys.createManagementKey(need(), values.name);
    } finally {
      await keys.close();
    }
  }
  throw new Error(`unknown command: gateway ${group} ${command ?? ''}`);
}
