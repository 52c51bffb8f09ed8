// The operator's wallet commands behind `npx gateway wallet create|rename|topup|show|list|owner` (the CLI entry
// parses argv and prints). Each returns the same JSON shape as the admin API answer, and throws GatewayError
// (status 400 / 404) on bad input, so the CLI can print `err.message` and exit 1.

import { labelFrom, wholeCredits } from '../admin/body.ts';
import { creditsAdded, ownerChanged } from '../admin/operator-audit.ts';
import { walletsCsv } from '../admin/wallet-csv.ts';
import { listWallets, parseWalletPageRequest, type WalletPage } from '../admin/wallet-list.ts';
import { renameWallet, walletNameOf } from '../admin/wallet-names.ts';
import { countActiveKeysIn, lotAdded, walletView } from '../admin/wallet-view.ts';
import { CLI_OPERATOR, recordAudit } from '../audit/trail.ts';
import { loadConfig, vendorIdsIn, yamlDirsFrom } from '../catalog/config.ts';
import { type Clock, koreanDate, systemClock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { type DisplayCurrency, moneyText, nanoToCreditsFloor } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import type { ClosedManagementKey } from '../keys/service.ts';
import { createLedger, type Ledger } from '../money/ledger.ts';
import { expiresAtFrom } from '../money/top-up.ts';

interface CliContext {
  clock?: Clock;
  /** Reuse a ledger (tests); default: one on `db`. */
  ledger?: Ledger;
  /** The display currency (tests); default: billing.yaml's in the config folder the CLI runs with. */
  currency?: DisplayCurrency | null;
}

/**
 * billing.yaml's display_currency, as a gateway on the same config folder shows money. A config folder that
 * does not load shows dollars: the command still does its work, and `catalog check` names the problem.
 */
function currencyOf(ctx: CliContext): DisplayCurrency | null {
  if (ctx.currency !== undefined) return ctx.currency;
  try {
    return loadConfig(yamlDirsFrom(process.env).config).billing.display_currency ?? null;
  } catch {
    return null;
  }
}

const todayOf = (ctx: CliContext) => koreanDate((ctx.clock ?? systemClock).now());

/** The operator's ledger: a restricted top-up may name the vendors of the config folder the CLI runs with. */
const ledgerFor = (db: Db, ctx: CliContext) =>
  ctx.ledger ??
  createLedger(db, { clock: ctx.clock ?? systemClock, owner: 'cli', vendors: () => vendorIdsIn(yamlDirsFrom(process.env).config) });

/** `--credits` as typed: credits, dollars ('$5') or won ('₩7000') with a display currency; the one reader's. */
const credits = (v: number | string | undefined, min: number, ctx: CliContext): number =>
  wholeCredits(v, 'credits', { min }, currencyOf(ctx));

/** `gateway wallet create [--credits N] [--splits-usage] [--key-slots N] [--owner ID] [--name NAME]` */
export async function walletCreate(
  db: Db,
  opts: {
    credits?: number | string | undefined;
    splitsUsage?: boolean | undefined;
    keySlots?: number | string | undefined;
    ownerId?: string | undefined;
    name?: string | undefined;
  } = {},
  ctx: CliContext = {},
) {
  const keySlots = opts.keySlots === undefined ? undefined : Number(opts.keySlots);
  if (keySlots !== undefined && (!Number.isInteger(keySlots) || keySlots < 0 || keySlots > 1_000_000)) {
    throw errors.invalidRequest('--key-slots must be a whole number from 0 to 1000000.', 'key_slots');
  }
  const amount = opts.credits === undefined ? 0 : credits(opts.credits, 0, ctx);
  const w = await ledgerFor(db, ctx).createWallet({
    credits: amount,
    splitsUsage: opts.splitsUsage ?? false,
    keySlots,
    ownerId: opts.ownerId,
    name: walletNameOf(opts.name),
    beside: (tx, made) => recordAudit(tx, CLI_OPERATOR, creditsAdded(made.walletId, made, amount), (ctx.clock ?? systemClock).now()),
  });
  const nano = w.lot?.availableNano ?? 0n;
  return {
    id: w.id,
    name: w.name,
    credits: Number(nanoToCreditsFloor(nano)),
    money: moneyText(nano, currencyOf(ctx), 'down'),
    splits_usage: w.splitsUsage,
    key_slots: w.keySlots,
    owner_id: w.ownerId,
  };
}

/**
 * `gateway wallet topup <wallet-id> --credits N [--vendors c,d] [--expires-at ISO] [--label NAME]` (vendors as an array or
 * "c,d"; expires_at as POST /admin/v1/wallets/{id}/credits takes it).
 */
export async function walletTopup(
  db: Db,
  walletId: string,
  opts: {
    credits: number | string;
    vendors?: string[] | string | null | undefined;
    expiresAt?: string | null | undefined;
    label?: string | undefined;
  },
  ctx: CliContext = {},
): Promise<ReturnType<typeof lotAdded>> {
  const vendors =
    typeof opts.vendors === 'string'
      ? opts.vendors
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean)
      : (opts.vendors ?? null);
  const amount = credits(opts.credits, 1, ctx);
  const now = () => (ctx.clock ?? systemClock).now();
  const lot = await ledgerFor(db, ctx).topUp(walletId, {
    credits: amount,
    vendors,
    expiresAt: expiresAtFrom(opts.expiresAt),
    label: labelFrom(opts.label),
    beside: (tx, made) => recordAudit(tx, CLI_OPERATOR, creditsAdded(walletId, made, amount), now()),
  });
  return lotAdded(lot, currencyOf(ctx));
}

/** `gateway wallet rename <wallet-id> --name NAME` (an empty name: none): as PATCH /admin/v1/wallets/{id}. */
export async function walletRename(db: Db, walletId: string, name: string | undefined, ctx: CliContext = {}) {
  if (name === undefined) throw errors.invalidRequest('usage: gateway wallet rename <wallet-id> --name NAME', 'name');
  const w = await renameWallet(db, walletId, name === '' ? null : walletNameOf(name), CLI_OPERATOR, (ctx.clock ?? systemClock).now());
  return walletShow(db, w.id, ctx);
}

/** `gateway wallet show <wallet-id>`: the same answer as GET /admin/v1/wallets/{id}. */
export async function walletShow(db: Db, walletId: string, ctx: CliContext = {}) {
  const ledger = ledgerFor(db, ctx);
  const w = await ledger.getWallet(walletId);
  if (!w) throw errors.notFound(`No wallet '${walletId}'.`);
  const today = todayOf(ctx);
  return walletView(db, w, (id) => countActiveKeysIn(db, id, today), {
    today,
    currency: currencyOf(ctx),
    now: (ctx.clock ?? systemClock).now(),
  });
}

/** `gateway wallet list [--limit N] [--cursor C] [--sort S] [--csv]`: the same page (or file) as GET /admin/v1/wallets. */
export async function walletList(
  db: Db,
  opts: { limit?: string | undefined; cursor?: string | undefined; sort?: string | undefined; csv?: boolean | undefined } = {},
  ctx: CliContext = {},
): Promise<WalletPage | string> {
  if (opts.csv) return walletsCsv(db, { sort: opts.sort }, todayOf(ctx), currencyOf(ctx));
  return listWallets(db, parseWalletPageRequest(opts), todayOf(ctx), currencyOf(ctx));
}

/**
 * `gateway wallet owner <wallet-id> <owner-id>`: as POST /admin/v1/wallets/{id}/owner, including closing the
 * management keys the previous owner made (`closeFormerOwnerKeys`, the key service's).
 */
export async function walletOwner(
  db: Db,
  walletId: string,
  ownerId: string,
  closeFormerOwnerKeys: (walletId: string) => Promise<ClosedManagementKey[]>,
  ctx: CliContext = {},
): Promise<{ id: string; owner_id: string; closed_management_keys: ClosedManagementKey[] }> {
  if (ownerId.trim() === '' || ownerId.length > 200) {
    throw errors.invalidRequest('owner_id must be a non-empty string of up to 200 characters.', 'owner_id');
  }
  const ledger = ledgerFor(db, ctx);
  const before = await ledger.getWallet(walletId);
  if (!before) throw errors.notFound(`No wallet '${walletId}'.`);
  const w = await ledger.setOwner(walletId, ownerId, (tx, previous) =>
    recordAudit(tx, CLI_OPERATOR, ownerChanged(walletId, previous, ownerId), (ctx.clock ?? systemClock).now()),
  );
  const closed = before.ownerId !== w.ownerId ? await closeFormerOwnerKeys(w.id) : [];
  return { id: w.id, owner_id: w.ownerId, closed_management_keys: closed };
}
