// `gateway wallet create|rename|topup|show|list|owner|sign-in-link`, `gateway key create` and
// `gateway management-key create|list|close`:
// argv in, JSON out (the admin API's answers; `wallet list --csv` prints the CSV file as it is).

import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { processAlive, type RunningGatewayFile, readRunningGatewayFile } from '../admin/running-gateway-file.ts';
import { CLI_OPERATOR } from '../audit/trail.ts';
import { systemClock } from '../core/clock.ts';
import { errors, isGatewayError } from '../core/errors.ts';
import { openDatabase } from '../db/open.ts';
import { closeManagementKey, createKeyService, type KeyService, listManagementKeys } from '../keys/index.ts';
import { createOperatorKey } from '../keys/manage.ts';
import { adminCallFor, type CommandValues, GatewayUnreachable, runOnGateway } from './running-gateway-client.ts';
import { walletCreate, walletList, walletOwner, walletRename, walletShow, walletTopup } from './wallet-commands.ts';

const OPTIONS = {
  credits: { type: 'string' },
  'splits-usage': { type: 'boolean' },
  'key-slots': { type: 'string' },
  owner: { type: 'string' },
  vendors: { type: 'string' },
  'expires-at': { type: 'string' },
  label: { type: 'string' },
  name: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  sort: { type: 'string' },
  csv: { type: 'boolean' },
} as const;

/**
 * Prints a command's answer: JSON, a CSV file as it is, and after an owner change a sentence on stderr saying
 * which management keys it closed, so the operator who made them is not left wondering why theirs stopped.
 */
function printAnswer(out: unknown): void {
  if (typeof out === 'string') {
    process.stdout.write(out);
    return;
  }
  console.log(JSON.stringify(out, null, 2));
  const closed = (out as { closed_management_keys?: { id: string; name: string | null; key_prefix: string }[] } | null)
    ?.closed_management_keys;
  if (!closed) return;
  if (closed.length === 0) console.error('No management key was closed: the previous owner had made none that were open.');
  else
    console.error(
      `Closed ${closed.length} management key${closed.length === 1 ? '' : 's'} the previous owner made: ` +
        `${closed.map((k) => `${k.id} (${k.name ?? 'unnamed'}, ${k.key_prefix})`).join(', ')}. ` +
        'The new owner makes new ones (npx gateway management-key create).',
    );
}

export async function runWalletCommand(group: string, command: string | undefined, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  // PostgreSQL is shared by every process, so the command writes to it directly. The embedded database is
  // one process's: the command goes through the gateway that holds it, or writes nothing.
  if (!process.env.DATABASE_URL) {
    const dataDir = process.env.GATEWAY_DATA_DIR ?? './data';
    const running = readRunningGatewayFile(dataDir);
    if (running && processAlive(running.pid)) return runThroughGateway(running, group, command, positionals, values, dataDir);
    if (!existsSync(dataDir)) {
      console.error(`No gateway database in ${dataDir}. Start the gateway once (npm start), or set GATEWAY_DATA_DIR to its data folder.`);
      return 1;
    }
  }
  // Refused (exit 1, naming the holder) when another process holds the embedded folder: a gateway still
  // starting, or another command.
  const role = `operator command: gateway ${group} ${command ?? ''}`.trim();
  const db = await openDatabase({ url: process.env.DATABASE_URL, dataDir: process.env.GATEWAY_DATA_DIR ?? './data', role });
  try {
    printAnswer(await run(group, command, positionals, values, db));
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
  positionals: string[],
  values: CommandValues,
  dataDir: string,
): Promise<number> {
  try {
    printAnswer(await runOnGateway(running, adminCallFor(group, command, positionals, values)));
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
  positionals: string[],
  values: CommandValues,
  db: Awaited<ReturnType<typeof openDatabase>>,
): Promise<unknown> {
  const [walletId, second] = positionals;
  const need = (what = '') => {
    if (!walletId || (what && !second)) throw new Error(`usage: gateway ${group} ${command} <wallet-id>${what}`);
    return walletId;
  };
  const needTwo = (what: string): [string, string] => [need(what), second!]; // need() refused a missing second
  // The key service announces closed keys to every gateway on this PostgreSQL (NOTIFY), so they drop them at once.
  const withKeys = async <T>(f: (keys: KeyService) => Promise<T>): Promise<T> => {
    const keys = createKeyService(db, { clock: systemClock });
    try {
      return await f(keys);
    } finally {
      await keys.close();
    }
  };
  if (group === 'wallet' && command === 'create') {
    return walletCreate(db, {
      credits: values.credits,
      splitsUsage: values['splits-usage'],
      keySlots: values['key-slots'],
      ownerId: values.owner,
      name: values.name,
    });
  }
  if (group === 'wallet' && command === 'rename') return walletRename(db, need(), values.name);
  if (group === 'wallet' && command === 'topup') {
    if (!values.credits)
      throw new Error('usage: gateway wallet topup <wallet-id> --credits N [--vendors c,d] [--expires-at ISO] [--label NAME]');
    return walletTopup(db, need(), {
      credits: values.credits,
      vendors: values.vendors,
      expiresAt: values['expires-at'],
      label: values.label,
    });
  }
  if (group === 'wallet' && command === 'show') return walletShow(db, need());
  if (group === 'wallet' && command === 'list') {
    return walletList(db, { limit: values.limit, cursor: values.cursor, sort: values.sort, csv: values.csv });
  }
  if (group === 'wallet' && command === 'owner') {
    const [id, ownerId] = needTwo(' <owner-id>');
    return withKeys((keys) => walletOwner(db, id, ownerId, (id) => keys.closeFormerOwnerManagementKeys(id, CLI_OPERATOR)));
  }
  if (group === 'wallet' && command === 'sign-in-link') return (await import('./sign-in-link.ts')).signInLink(db, need());
  if (group === 'key' && command === 'create') {
    const id = need();
    await walletShow(db, id); // 404 for an unknown wallet, as the admin API answers
    return withKeys((keys) => createOperatorKey({ keys, db, clock: systemClock }, id, { name: values.name }, CLI_OPERATOR));
  }
  if (group === 'management-key' && command === 'create') {
    return withKeys(async (keys) => ({
      ...(await keys.createManagementKey(need(), values.name, CLI_OPERATOR)),
      name: values.name ?? null,
    }));
  }
  if (group === 'management-key' && command === 'list') {
    const id = need();
    await walletShow(db, id); // 404 for an unknown wallet, as the admin API answers
    return { object: 'list', data: await listManagementKeys(db, id) };
  }
  if (group === 'management-key' && command === 'close') {
    const [id, keyId] = needTwo(' <key-id>');
    await walletShow(db, id);
    if (!(await withKeys((keys) => closeManagementKey(keys, id, keyId, CLI_OPERATOR)))) {
      throw errors.notFound(`No open management key '${keyId}' in wallet '${id}' (it may be closed already).`);
    }
    return { id: keyId, object: 'management_key', closed: true };
  }
  throw new Error(`unknown command: gateway ${group} ${command ?? ''}`);
}
