// `gateway wallet create|topup|show|sign-in-link` and `gateway management-key create`: argv in, JSON out.
import { parseArgs } from 'node:util';
import { walletCreate, walletShow, walletTopup } from './wallet-commands.ts';
import { systemClock } from '../core/clock.ts';
import { openDatabase } from '../db/open.ts';
import { isGatewayError } from '../core/errors.ts';
import { createKeyService } from '../keys/index.ts';
import { existsSync } from 'node:fs';
import { processAlive, readRunningGatewayFile, type RunningGatewayFile } from '../admin/running-gateway-file.ts';
import { adminCallFor, GatewayUnreachable, runOnGateway, type CommandValues } from './running-gateway-client.ts';

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
  // PostgreSQL is shared by every process, so the command writes to it directly. The embedded database is
  // one process's: the command goes through the gateway that holds it, or writes nothing.
  if (!process.env.DATABASE_URL) {
    const dataDir = process.env.GATEWAY_DATA_DIR ?? './data';
    const running = readRunningGatewayFile(dataDir);
    if (running && processAlive(running.pid)) return runThroughGateway(running, group, command, positionals[0], values, dataDir);
    if (!existsSync(dataDir)) {
      console.error(`No gateway database in ${dataDir}. Start the gateway once (npm start), or set GATEWAY_DATA_DIR to its data folder.`);
      return 1;
    }
  }
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

async function runThroughGateway(
  running: RunningGatewayFile,
  group: string,
  command: string | undefined,
  walletId: string | undefined,
  values: CommandValues,
  dataDir: string,
): Promise<number> {
  try {
    const out = await runOnGateway(running, adminCallFor(group, command, walletId, values));
    console.log(JSON.stringify(out, null, 2));
    return 0;
  } catch (e) {
    if (e instanceof GatewayUnreachable) {
      console.error(
        `A gateway (pid ${running.pid}) holds the embedded database in ${dataDir}, but ${e.message}. Nothing was written: ` +
          `the embedded database serves one process, so run the command again once that gateway answers, or stop it first.`,
      );
    } else console.error((e as Error).message);
    return 1;
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
  if (group === 'wallet' && command === 'sign-in-link') return (await import('./sign-in-link.ts')).signInLink(db, need());
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
