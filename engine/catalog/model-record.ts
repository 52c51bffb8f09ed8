// A catalog entry as GET /v1/models shows it: every figure a client needs to compute what a call costs.

import type { ModelEntry } from '../core/types.ts';
import type { GatewayConfig } from './config.ts';
import { pricesAt } from './pricing.ts';
import { describeRules } from './rules.ts';

export function modelRecord(m: ModelEntry, cfg: GatewayConfig, now: Date) {
  const p = m.pricing;
  const current = m.kind === 'text' || p.input !== undefined ? pricesAt(m, now) : undefined;
  return {
    id: m.id,
    object: 'model',
    owned_by: m.vendor,
    kind: m.kind,
    endpoint: m.doors[0] === undefined ? null : (cfg.doors[m.doors[0]]?.path ?? null),
    endpoints: m.doors.map((d) => cfg.doors[d]?.path).filter(Boolean),
    supports_effort: m.effort_levels !== null,
    effort_levels: m.effort_levels,
    context_window: m.context_window,
    max_output: m.max_output,
    pricing: {
      input_per_mtok: current?.input ?? null,
      output_per_mtok: current?.output ?? null,
      cache_read_per_mtok: p.cache_read ?? null,
      cache_write_per_mtok: p.cache_write ?? null,
      // A write kept an hour (`ttl: "1h"`) costs more where the vendor prices it apart.
      cache_write_1h_per_mtok: p.cache_write_1h ?? null,
      tiers: (p.tiers ?? []).map((t) => ({
        above_input_tokens: t.above_input_tokens,
        input_per_mtok: t.input,
        output_per_mtok: t.output,
      })),
      scheduled: (p.scheduled ?? []).map((s) => ({ from: s.from, input_per_mtok: s.input, output_per_mtok: s.output })),
      ...(p.image_reservation !== undefined ? { image_reservation: p.image_reservation } : {}),
      ...(p.image_charge !== undefined ? { image_charge: p.image_charge } : {}),
      ...(p.video_per_second ? { video_per_second: p.video_per_second } : {}),
      ...(p.per_mchar !== undefined ? { per_mchar: p.per_mchar } : {}),
    },
    rules: describeRules(m, cfg),
    sale_ends: m.sale_ends,
    successor: m.successor,
    data_handling: m.data_handling,
    source: m.source,
  };
}
