// What a call's usage cost, in two steps (the prices that applied, then the charge at them), because the usage
// record keeps the first: a price change never re-prices history, and any charge can be recomputed from its record.
import { usdToNano } from '../core/money.ts';
import type { ModelEntry, Usage } from '../core/types.ts';
import { type PricingContext, pricesAt, pricesForPrompt, scheduledPriceAt, tierForPrompt, tokenCost, wholeCount } from './pricing.ts';

/** A server tool's price (USD per call) and how many calls it charged. */
interface ToolPrice {
  calls: number;
  usd: number;
}

/** Tokens billed at another model's own prices (advisor tools): the counts travel with their prices. */
interface AdvisorPrice {
  model: string;
  input_tokens: number;
  output_tokens: number;
  input: number;
  output: number;
}

/**
 * The prices a call was charged at, USD as the catalog writes them (per 1M tokens, per image, per 1M
 * characters, per call). Only what applied is present, to keep a record small. `basis`: `base` (the base or
 * scheduled price), `tier` (the tier above `tier_above_input_tokens`), or `vendor` (the vendor stated its
 * charge, `vendor_nano`, and that was charged).
 */
export interface AppliedPrices {
  basis: 'base' | 'tier' | 'vendor';
  tier_above_input_tokens?: number;
  /** The scheduled price change in force (its Korean date), when one was. */
  scheduled_from?: string;
  input?: number;
  output?: number;
  cache_read?: number;
  cache_write?: number;
  /** Cache writes kept an hour: how many of the record's cache-write tokens they were, and their price. */
  cache_write_1h?: { tokens: number; usd: number };
  web_search?: ToolPrice;
  file_search?: ToolPrice;
  advisor?: AdvisorPrice[];
  image?: number;
  per_mchar?: number;
  vendor_nano?: string;
}

/** The counts a charge multiplies, as the usage record's columns hold them. */
interface ChargedCounts {
  input_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  images?: number | null;
  characters?: number | null;
}

/** The prices that apply to `usage` on `model` at `ctx.at`. */
export function appliedPrices(model: ModelEntry, usage: Usage, ctx: PricingContext): AppliedPrices {
  if (usage.vendor_cost_usd !== undefined) return { basis: 'vendor', vendor_nano: usdToNano(usage.vendor_cost_usd).toString() };
  const prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
  const tier = tierForPrompt(model, prompt);
  const scheduled = scheduledPriceAt(model, ctx.at);
  const p = pricesForPrompt(model, ctx.at, prompt);
  const out: AppliedPrices = {
    basis: tier ? 'tier' : 'base',
    ...(tier ? { tier_above_input_tokens: tier.above_input_tokens } : {}),
    ...(scheduled ? { scheduled_from: scheduled.from } : {}),
    input: p.input,
    output: p.output,
    cache_read: p.cache_read,
    cache_write: p.cache_write,
  };
  const hour = Number(wholeCount(Math.min(usage.cache_write_1h_tokens ?? 0, usage.cache_write_tokens)));
  if (hour > 0) out.cache_write_1h = { tokens: hour, usd: p.cache_write_1h };
  const webSearch = Number(wholeCount(usage.web_search_calls));
  if (webSearch > 0) out.web_search = { calls: webSearch, usd: ctx.billing.server_tools.web_search ?? 0 };
  const fileSearch = Number(wholeCount(usage.file_search_calls));
  if (fileSearch > 0) out.file_search = { calls: fileSearch, usd: ctx.billing.server_tools.file_search ?? 0 };
  if (usage.advisor?.length) {
    out.advisor = usage.advisor.map((a) => {
      const ap = pricesAt(ctx.modelById(a.model) ?? model, ctx.at);
      return { model: a.model, input_tokens: a.input_tokens, output_tokens: a.output_tokens, input: ap.input, output: ap.output };
    });
  }
  if (usage.images && model.pricing.image_charge !== undefined) out.image = model.pricing.image_charge;
  if (usage.characters && model.pricing.per_mchar !== undefined) out.per_mchar = model.pricing.per_mchar;
  return out;
}

/** The charge, in nano-USD, of `counts` at `prices`: the one formula of every charge and of its recomputation. */
export function chargeAt(prices: AppliedPrices, counts: ChargedCounts): bigint {
  if (prices.basis === 'vendor') return BigInt(prices.vendor_nano ?? '0');
  let total =
    tokenCost(counts.input_tokens, prices.input ?? 0) +
    tokenCost(counts.cache_read_tokens, prices.cache_read ?? 0) +
    cacheWriteCost(counts.cache_write_tokens, prices) +
    tokenCost(counts.output_tokens, prices.output ?? 0);
  for (const tool of [prices.web_search, prices.file_search]) if (tool) total += wholeCount(tool.calls) * usdToNano(tool.usd);
  for (const a of prices.advisor ?? []) total += tokenCost(a.input_tokens, a.input) + tokenCost(a.output_tokens, a.output);
  if (prices.image !== undefined && counts.images) total += wholeCount(counts.images) * usdToNano(prices.image);
  if (prices.per_mchar !== undefined && counts.characters) total += tokenCost(counts.characters, prices.per_mchar);
  return total;
}

/** Cache writes: those kept an hour at their own price, the rest at the cache-write price. */
function cacheWriteCost(tokens: number, prices: AppliedPrices): bigint {
  const hour = Math.min(prices.cache_write_1h?.tokens ?? 0, tokens);
  return tokenCost(tokens - hour, prices.cache_write ?? 0) + (hour > 0 ? tokenCost(hour, prices.cache_write_1h?.usd ?? 0) : 0n);
}

/** What the usage costs, in nano-USD. */
export function costOfUsage(model: ModelEntry, usage: Usage, ctx: PricingContext): bigint {
  return chargeAt(appliedPrices(model, usage, ctx), usage);
}
