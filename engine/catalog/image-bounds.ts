// The most an image call can cost: a per-image price holds the catalog's image_reservation, and a token-priced
// model holds its prompt-and-quality bound when larger, so neither a long prompt nor a high quality can spend
// beyond the balance.

import { usdToNano } from '../core/money.ts';
import type { JsonObject, JsonValue, ModelEntry } from '../core/types.ts';
import { measureBody } from './body-measure.ts';
import type { BillingConfig } from './config.ts';
import { pricesAt, tokenCost } from './pricing.ts';

export function imageReservation(model: ModelEntry, body: JsonObject, sourceImages: number, billing: BillingConfig, at: Date): bigint {
  const floor = usdToNano(model.pricing.image_reservation ?? 0);
  if (model.pricing.input === undefined && model.pricing.output === undefined) return floor;
  const r = billing.reservation;
  const inputTokens = measureBody(body).bytes + sourceImages * r.image_input_tokens;
  const outputTokens = qualityOutputTokens(r.image_output_tokens, body.quality);
  const prices = pricesAt(model, at);
  const bound = tokenCost(inputTokens, prices.input) + tokenCost(outputTokens, prices.output);
  return bound > floor ? bound : floor;
}

/**
 * The output held for the quality asked: none or `auto` is the `default` figure (billing.yaml: the vendor picks,
 * so the largest), a quality the table names its own. Any other value ("HIGH", "hd", a list) is held at the largest figure: a vendor that reads it as high
 * would otherwise produce more than the hold covers.
 */
function qualityOutputTokens(table: BillingConfig['reservation']['image_output_tokens'], quality: JsonValue | undefined): number {
  if (quality === undefined || quality === null || quality === 'auto') return table.default!; // the schema requires it
  if (typeof quality === 'string' && quality !== 'default' && Object.hasOwn(table, quality)) return table[quality]!;
  return Math.max(...Object.values(table));
}
