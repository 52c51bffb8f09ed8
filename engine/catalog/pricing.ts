// Prices from the catalog, turned into integer nano-USD. Two questions: what is the most this call
// can cost (the reservation), and what did it cost (the charge from usage).
import type { HeldTokens } from '../core/call.ts';
import { koreanDate } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { usdToNano } from '../core/money.ts';
import type { ModelEntry } from '../core/types.ts';
import type { BillingConfig } from './config.ts';
import type { TextBounds } from './text-bounds.ts';

const MTOK = 1_000_000n;

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

/** A count a vendor reported, as a whole number (rounded up; nonsense counts as 0). */
export const wholeCount = (n: number): bigint => (n > 0 && Number.isFinite(n) ? BigInt(Math.ceil(n)) : 0n);

/** The cost of `tokens` at a price per 1M tokens, rounded up to the next nano. */
export const tokenCost = (tokens: number, perMtokUsd: number): bigint => ceilDiv(wholeCount(tokens) * usdToNano(perMtokUsd), MTOK);

interface TokenPrices {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  /** A cache write kept an hour (`ttl: 1h`), where the catalog prices it apart; else the cache-write price. */
  cache_write_1h: number;
}

/** Base prices in force at an instant: the latest scheduled change whose Korean date has come. */
export function pricesAt(model: ModelEntry, at: Date): TokenPrices {
  const p = model.pricing;
  const scheduled = scheduledPriceAt(model, at);
  const input = scheduled?.input ?? p.input ?? 0;
  const output = scheduled?.output ?? p.output ?? 0;
  const cacheWrite = p.cache_write ?? input;
  return { input, output, cache_read: p.cache_read ?? input, cache_write: cacheWrite, cache_write_1h: p.cache_write_1h ?? cacheWrite };
}

/** The scheduled price change in force at an instant (the latest whose Korean date has come), if any. */
export function scheduledPriceAt(model: ModelEntry, at: Date): NonNullable<ModelEntry['pricing']['scheduled']>[number] | undefined {
  const { scheduled } = model.pricing;
  // Most models have no schedule: asked several times per call, that answer makes no list.
  if (!scheduled?.length) return undefined;
  const today = koreanDate(at);
  return scheduled
    .filter((s) => s.from <= today)
    .sort((x, y) => x.from.localeCompare(y.from))
    .pop();
}

/** The price tier a prompt of `promptTokens` falls in (above its threshold), if any. */
export function tierForPrompt(model: ModelEntry, promptTokens: number): NonNullable<ModelEntry['pricing']['tiers']>[number] | undefined {
  const { tiers } = model.pricing;
  return tiers?.length ? tiers.filter((t) => promptTokens > t.above_input_tokens).pop() : undefined;
}

/**
 * Prices for a call whose whole prompt (uncached + cache read + cache write) is `promptTokens`.
 * A tier applies once the prompt is above its threshold; cache prices scale with the input price.
 */
export function pricesForPrompt(model: ModelEntry, at: Date, promptTokens: number): TokenPrices {
  const base = pricesAt(model, at);
  const tier = tierForPrompt(model, promptTokens);
  if (!tier) return base;
  const scale = base.input > 0 ? tier.input / base.input : 1;
  return {
    input: tier.input,
    output: tier.output,
    cache_read: toNanoPrecision(base.cache_read * scale),
    cache_write: toNanoPrecision(base.cache_write * scale),
    cache_write_1h: toNanoPrecision(base.cache_write_1h * scale),
  };
}

/** A scaled price may carry float noise (0.30000000000000004); prices are exact to the nano. */
const toNanoPrecision = (usd: number) => Number(usd.toFixed(9));

export interface PricingContext {
  billing: BillingConfig;
  /** Other models, for usage billed at another model's price (advisor tokens). */
  modelById: (id: string) => ModelEntry | undefined;
  at: Date;
}

// ---------------------------------------------------------------------------------------------
// Reservation: an upper bound, never below what the vendor will count.

/**
 * The call's own input and output a text call's bounds hold. A loop's later passes and any summarising passes are
 * billed as the call's own input and output: the usage the vendor reports sums them, and the settle prices the
 * tier of that sum.
 */
export const heldTokensOf = (b: TextBounds): HeldTokens => ({
  input_tokens: b.inputTokens + b.passes.inputTokens + b.passes.summaryInputTokens,
  output_tokens: b.outputTokens + b.passes.summaryOutputTokens,
});

/** The most a text call can cost: its bounds (text-bounds.ts) at the prices they may reach. */
export function textReservation(model: ModelEntry, b: TextBounds, ctx: PricingContext): bigint {
  const held = heldTokensOf(b);
  const p = pricesForPrompt(model, ctx.at, held.input_tokens);
  // Cache reads are never above the input price (the catalog check enforces it); a cache write may be.
  const cacheWrite = b.cacheWrites ? Math.max(p.cache_write, b.cacheWritesHour ? p.cache_write_1h : 0) : 0;
  const worstInput = Math.max(p.input, p.cache_read, cacheWrite);
  return (
    tokenCost(held.input_tokens, worstInput) +
    tokenCost(held.output_tokens, p.output) +
    BigInt(b.serverToolCalls.web_search) * usdToNano(ctx.billing.server_tools.web_search ?? 0) +
    BigInt(b.serverToolCalls.file_search) * usdToNano(ctx.billing.server_tools.file_search ?? 0) +
    advisorReservation(b, ctx)
  );
}

/**
 * Each advisor use reads the whole transcript (at most the call's input and output bounds) and writes up to its
 * per-use cap, at the advisor model's own prices. An advisor model the catalog does not price cannot be held.
 */
function advisorReservation(b: TextBounds, ctx: PricingContext): bigint {
  let total = 0n;
  for (const a of b.advisors) {
    const advisor = typeof a.model === 'string' ? ctx.modelById(a.model) : undefined;
    if (!advisor)
      throw errors.invalidRequest(`${a.at} must name a model of the catalog: an advisor is billed at its own model's price.`, a.at);
    const transcript = b.inputTokens + b.outputTokens;
    const p = pricesForPrompt(advisor, ctx.at, transcript);
    const maxOut = advisor.max_output ?? 0;
    const out = a.outputPerUse === null ? maxOut : Math.min(a.outputPerUse, maxOut || a.outputPerUse);
    total += BigInt(a.uses) * (tokenCost(transcript, Math.max(p.input, p.cache_read, p.cache_write)) + tokenCost(out, p.output));
  }
  return total;
}
