// The admin API's wallets themselves: made (with a name), renamed, shown, and listed as the district overview
// (JSON pages, or every wallet as CSV). routes.ts says each answer's shape.
import type { FastifyInstance } from 'fastify';
import { recordAudit } from '../audit/trail.ts';
import { type Clock, koreanDate } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { type DisplayCurrency, moneyText, nanoToCreditsFloor } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import type { Ledger, Wallet } from '../money/ledger.ts';
import { objectBody, wholeCredits } from './body.ts';
import { creditsAdded, operatorActor } from './operator-audit.ts';
import { walletsCsv } from './wallet-csv.ts';
import { listWallets, parseWalletPageRequest } from './wallet-list.ts';
import { renameWallet, walletNameOf } from './wallet-names.ts';
import { walletView } from './wallet-view.ts';

interface WalletRouteDeps {
  db: Db;
  ledger: Ledger;
  clock: Clock;
  localToken?: string | undefined;
  currency: () => DisplayCurrency | null;
  requireWallet: (id: string) => Promise<Wallet>;
  countActiveKeys: (walletId: string) => Promise<number>;
}

function checkCreateFields(b: Record<string, unknown>): void {
  if (b.splits_usage !== undefined && typeof b.splits_usage !== 'boolean') {
    throw errors.invalidRequest('splits_usage must be true or false.', 'splits_usage');
  }
  if (
    b.key_slots !== undefined &&
    (typeof b.key_slots !== 'number' || !Number.isInteger(b.key_slots) || b.key_slots < 0 || b.key_slots > 1_000_000)
  ) {
    throw errors.invalidRequest('key_slots must be a whole number from 0 to 1000000.', 'key_slots');
  }
  if (b.owner_id !== undefined && (typeof b.owner_id !== 'string' || b.owner_id.trim() === '' || b.owner_id.length > 200)) {
    throw errors.invalidRequest('owner_id must be a non-empty string of up to 200 characters.', 'owner_id');
  }
}

export function registerWalletRoutes(scope: FastifyInstance, deps: WalletRouteDeps): void {
  const { db, ledger, clock, currency } = deps;
  const today = () => koreanDate(clock.now());
  const viewOf = (w: Wallet) => walletView(db, w, deps.countActiveKeys, { today: today(), currency: currency(), now: clock.now() });

  scope.post('/admin/v1/wallets', async (req, reply) => {
    const b = objectBody(req.body, ['credits', 'splits_usage', 'key_slots', 'owner_id', 'name']);
    const credits = b.credits === undefined ? 0 : wholeCredits(b.credits, 'credits', { min: 0 }, currency());
    checkCreateFields(b);
    const actor = operatorActor(req, deps.localToken);
    const w = await ledger.createWallet({
      credits,
      splitsUsage: b.splits_usage as boolean | undefined,
      keySlots: b.key_slots as number | undefined,
      ownerId: b.owner_id as string | undefined,
      name: walletNameOf(b.name),
      // The first credits are a money change like any top-up: in the trail, written with the wallet.
      beside: (tx, made) => recordAudit(tx, actor, creditsAdded(made.walletId, made, credits), clock.now()),
    });
    const nano = w.lot?.availableNano ?? 0n;
    return reply.code(201).send({
      id: w.id,
      name: w.name,
      credits: Number(nanoToCreditsFloor(nano)),
      money: moneyText(nano, currency(), 'down'),
      splits_usage: w.splitsUsage,
      key_slots: w.keySlots,
      owner_id: w.ownerId,
    });
  });

  scope.patch<{ Params: { id: string } }>('/admin/v1/wallets/:id', async (req) => {
    const b = objectBody(req.body, ['name']);
    if (!('name' in b)) throw errors.invalidRequest('name is required: the wallet’s new name, or null for none.', 'name');
    const w = await renameWallet(db, req.params.id, walletNameOf(b.name), operatorActor(req, deps.localToken), clock.now());
    return viewOf(w);
  });

  scope.get('/admin/v1/wallets', async (req, reply) => {
    const query = req.query as Record<string, unknown>;
    const format = Array.isArray(query.format) ? query.format[query.format.length - 1] : query.format;
    if (format !== undefined && format !== 'json' && format !== 'csv') throw errors.invalidRequest('format must be json or csv.', 'format');
    if (format !== 'csv') return listWallets(db, parseWalletPageRequest(query), today(), currency());
    const csv = await walletsCsv(db, query, today(), currency());
    return reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="wallets-${today()}.csv"`)
      .send(csv);
  });

  scope.get<{ Params: { id: string } }>('/admin/v1/wallets/:id', async (req) => viewOf(await deps.requireWallet(req.params.id)));
}
