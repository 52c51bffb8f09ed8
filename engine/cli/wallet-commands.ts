// The operator's wallet commands behind `npx gateway wallet create|topup|show|list|owner` (the CLI entry parses
// argv and prints). Each returns the same JSON shape as the admin API answer, and throws GatewayError
// (status 400 / 404) on bad input, so the CLI can print `err.message` and exit 1.
import { koreanDate, systemClock, type Clock } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import { errors } from '../core/errors.ts';
import { vendorIdsIn, yamlDirsFrom } from '../catalog/config.ts';
import { createLedger, type Ledger } from '../money/ledger.ts';
import { nanoToCreditsFloor } from '../core/money.ts';
import { MAX_CREDITS } from '../admin/routes.ts';
import { countActiveKeysIn, walletView } from '../admin/wallet-view.ts';
import { creditsAdded, ownerChanged } from '../admin/operator-audit.ts';
import { CLI_OPERATOR, recordAudit } from '../audit/trail.ts';
import { listWallets, parseWalletPageRequest, type WalletPage } from '../admin/wallet-list.ts';

interface CliContext {
  clock?: Clock;
  /** Reuse a ledger (tests); default: one on `db`. */
  ledger?: Ledger;
}

/** The operator's ledger: a restricted top-up may name the vendors of the config folder the CLI runs with. */
const ledgerFor = (db: Db, ctx: CliContext) =>
  ctx.ledger ??
  createLedger(db, { clock: ctx.clock ?? systemClock, owner: 'cli', vendors: () => vendorIdsIn(yamlDirsFrom(process.env).config) });

function credits(v: number | string | undefined, min: number): number {
  const n = typeof v === 'string' ? Number(v) : v;
  if (n === undefined || !Number.isInteger(n) || n < min || n > MAX_CREDITS) {
    throw errors.invalidRequest(`--credits must be a whole number from ${min} to ${MAX_CREDITS}.`, 'credits');
  }
  return n;
}

/** `gateway wallet create [--credits N] [--splits-usage] [--key-slots N] [--owner ID]` */
export async function walletCreate(
  db: Db,
  opts: { credits?: number | string; splitsUsage?: boolean; keySlots?: number | string; ownerId?: string } = {},
  ctx: CliContext = {},
): Promise<{ id: string; credits: number; splits_usage: boolean; key_slots: number; owner_id: string }> {
  const keySlots = opts.keySlots === undefined ? undefined : Number(opts.keySlots);
  if (keySlots !== undefined && (!Number.isInteger(keySlots) || keySlots < 0 || keySlots > 1_000_000)) {
    throw errors.invalidRequest('--key-slots must be a whole number from 0 to 1000000.', 'key_slots');
  }
  const amount = opts.credits === undefined ? 0 : credits(opts.credits, 0);
  const w = await ledgerFor(db, ctx).createWallet({
    credits: amount,
    splitsUsage: opts.splitsUsage ?? false,
    keySlots,
    ownerId: opts.ownerId,
    beside: (tx, made) => recordAudit(tx, CLI_OPERATOR, creditsAdded(made.walletId, made, amount), (ctx.clock ?? systemClock).now()),
  });
  return {
    id: w.id,
    credits: Number(nanoToCreditsFloor(w.lot?.availableNano ?? 0n)),
    splits_usage: w.splitsUsage,
    key_slots: w.keySlots,
    owner_id: w.ownerId,
  };
}

/** `gateway wallet topup <wallet-id> --credits N [--vendors c,d]` (vendors as an array or "c,d"). */
export async function walletTopup(
  db: Db,
  walletId: string,
  opts: { credits: number | string; vendors?: string[] | string | null },
  ctx: CliContext = {},
): Promise<{ lot_id: string; credits: number; vendors: string[] | null }> {
  const vendors =
    typeof opts.vendors === 'string'
      ? opts.vendors
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean)
      : (opts.vendors ?? null);
  const amount = credits(opts.credits, 1);
  const now = () => (ctx.clock ?? systemClock).now();
  const lot = await ledgerFor(db, ctx).topUp(walletId, {
    credits: amount,
    vendors,
    beside: (tx, made) => recordAudit(tx, CLI_OPERATOR, creditsAdded(walletId, made, amount), now()),
  });
  return { lot_id: lot.id, credits: Number(nanoToCreditsFloor(lot.grantedNano)), vendors: lot.vendors };
}

/** `gateway wallet show <wallet-id>`: the same answer as GET /admin/v1/wallets/{id}. */
export async function walletShow(db: Db, walletId: string, ctx: CliContext = {}) {
  const ledger = ledgerFor(db, ctx);
  const w = await ledger.getWallet(walletId);
  if (!w) throw errors.notFound(`No wallet '${walletId}'.`);
  return walletView(db, ledger, w, (id) => countActiveKeysIn(db, id, koreanDate((ctx.clock ?? systemClock).now())));
}

/** `gateway wallet list [--limit N] [--cursor C]`: the same page as GET /admin/v1/wallets. */
export async function walletList(db: Db, opts: { limit?: string; cursor?: string } = {}, ctx: CliContext = {}): Promise<WalletPage> {
  return listWallets(db, parseWalletPageRequest(opts), koreanDate((ctx.clock ?? systemClock).now()));
}

/**
 * `gateway wallet owner <wallet-id> <owner-id>`: as POST /admin/v1/wallets/{id}/owner, including closing the
 * management keys the previous owner made (`closeFormerOwnerKeys`, the key service's).
 */
export async function walletOwner(
  db: Db,
  walletId: string,
  ownerId: string,
  closeFormerOwnerKeys: (walletId: string) => Promise<number>,
  ctx: CliContext = {},
): Promise<{ id: string; owner_id: string }> {
  if (ownerId.trim() === '' || ownerId.length > 200) {
    throw errors.invalidRequest('owner_id must be a non-empty string of up to 200 characters.', 'owner_id');
  }
  const ledger = ledgerFor(db, ctx);
  const before = await ledger.getWallet(walletId);
  if (!before) throw errors.notFound(`No wallet '${walletId}'.`);
  const w = await ledger.setOwner(walletId, ownerId, (tx, previous) =>
    recordAudit(tx, CLI_OPERATOR, ownerChanged(walletId, previous, ownerId), (ctx.clock ?? systemClock).now()),
  );
  if (before.ownerId !== w.ownerId) await closeFormerOwnerKeys(w.id);
  return { id: w.id, owner_id: w.ownerId };
}
