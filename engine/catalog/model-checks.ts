// What catalog/schema.json cannot see about one model: its dates are days of the calendar, its successor
// exists and can take over, its rules and doors exist and serve it, its tiers sit above the base price,
// its media prices agree with config/.

import { usdToNano } from '../core/money.ts';
import type { ModelEntry } from '../core/types.ts';
import { impossibleDate, modelDates } from './catalog-dates.ts';
import type { GatewayConfig } from './config.ts';
import { didYouMean } from './nearest-name.ts';
import { unknownVendor } from './vendor-references.ts';

type Locate = (path: (string | number)[]) => string;

/** Problems as `file:line: model 'id': reason`; `at` places a path inside a model in its file. */
export function modelProblems(
  models: Map<string, ModelEntry>,
  at: (m: ModelEntry, path: (string | number)[]) => string,
  cfg: GatewayConfig,
  broken: ReadonlySet<string> = new Set(),
): string[] {
  return [...models.values()].flatMap((m) => checkModel(m, models, cfg, (path) => `${at(m, path)}: model '${m.id}'`, broken));
}

function checkModel(m: ModelEntry, all: Map<string, ModelEntry>, cfg: GatewayConfig, at: Locate, broken: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const p = m.pricing;
  for (const { path, label, date } of modelDates(m)) {
    const why = impossibleDate(date);
    if (why) out.push(`${at(path)}: ${label} '${date}' is not a calendar date (${why})`);
  }
  out.push(...successorProblems(m, all, at, broken));
  m.rules.forEach((rule, i) => {
    if (!Object.hasOwn(cfg.rules, rule)) {
      out.push(`${at(['rules', i])}: rule '${rule}' is not defined in config/rules.yaml${didYouMean(rule, Object.keys(cfg.rules))}`);
    }
  });
  const unknown = unknownVendor(cfg.vendors)(m.vendor);
  // No door serves a vendor that is not one, so only this is said of it.
  if (unknown) out.push(`${at(['vendor'])}: names vendor '${m.vendor}', ${unknown}`);
  else if (m.doors.length === 0) out.push(`${at([])}: no door serves ${m.kind} models of vendor ${m.vendor}`);
  m.doors.forEach((name, i) => {
    const door = Object.hasOwn(cfg.doors, name) ? cfg.doors[name] : undefined;
    if (!door) out.push(`${at(['doors', i])}: door '${name}' does not exist`);
    else if (!door.serves.kinds.includes(m.kind) || !door.serves.vendors.includes(m.vendor)) {
      out.push(`${at(['doors', i])}: door '${name}' does not serve ${m.kind} models of vendor ${m.vendor}`);
    }
  });
  if (m.kind === 'text') out.push(...checkTextPricing(m, at));
  out.push(...uncountablePrices(m.pricing, ['pricing'], at));
  if (p.cache_read !== undefined && p.input !== undefined && p.cache_read >= p.input) {
    out.push(`${at(['pricing', 'cache_read'])}: cache_read price ${p.cache_read} is not below the input price ${p.input}`);
  }
  if (m.kind === 'image' && p.image_reservation === undefined) out.push(`${at(['pricing'])}: image model without image_reservation`);
  if (p.image_charge !== undefined && p.image_reservation !== undefined) {
    const factor = cfg.billing.image_reservation_factor;
    const expected = Math.round(p.image_charge * factor * 1e9);
    if (Math.round(p.image_reservation * 1e9) !== expected) {
      out.push(
        `${at(['pricing', 'image_reservation'])}: image_reservation ${p.image_reservation} is not ${factor} × image_charge ${p.image_charge} (config/billing.yaml)`,
      );
    }
  }
  if (m.kind === 'video' && !p.video_per_second) out.push(`${at(['pricing'])}: video model without video_per_second`);
  for (const resolution of Object.keys(p.video_per_second ?? {})) {
    if (!cfg.videos.resolutions.includes(resolution)) {
      out.push(
        `${at(['pricing', 'video_per_second', resolution])}: video_per_second names resolution '${resolution}', which config/videos.yaml does not list`,
      );
    }
  }
  if (m.kind === 'speech' && p.per_mchar === undefined) out.push(`${at(['pricing'])}: speech model without per_mchar`);
  return out;
}

/**
 * Prices the ledger cannot count: every call converts its prices to nano-USD, so a figure finer than a nano-dollar
 * would refuse every call to the model (503) from the moment it was loaded. Token thresholds are counts, not prices.
 */
function uncountablePrices(v: unknown, path: (string | number)[], at: Locate): string[] {
  if (typeof v === 'number') {
    if (path.at(-1) === 'above_input_tokens') return [];
    try {
      usdToNano(v);
      return [];
    } catch {
      return [`${at(path)}: price ${v} is not an amount the ledger counts (USD with at most 9 decimal places)`];
    }
  }
  if (Array.isArray(v)) return v.flatMap((x, i) => uncountablePrices(x, [...path, i], at));
  if (typeof v !== 'object' || v === null) return [];
  return Object.entries(v).flatMap(([k, x]) => uncountablePrices(x, [...path, k], at));
}

/** Callers of a model whose sale ends are pointed at its successor, which must be there to take the same calls. */
function successorProblems(m: ModelEntry, all: Map<string, ModelEntry>, at: Locate, broken: ReadonlySet<string>): string[] {
  if (!m.successor) return m.sale_ends ? [`${at(['sale_ends'])}: has a sale-end date but no successor`] : [];
  const successor = all.get(m.successor);
  if (m.successor === m.id) return [`${at(['successor'])}: is its own successor`];
  // One written but failed its schema has that problem listed already, and its kind cannot be trusted.
  if (!successor && !broken.has(m.successor))
    return [`${at(['successor'])}: successor '${m.successor}' does not exist${didYouMean(m.successor, all.keys())}`];
  const out: string[] = [];
  if (successor && successor.kind !== m.kind) {
    out.push(
      `${at(['successor'])}: successor '${m.successor}' is ${/^[aeiou]/.test(successor.kind) ? 'an' : 'a'} ${successor.kind} model, so it cannot take the ${m.kind} calls of this one`,
    );
  }
  if (!m.sale_ends)
    out.push(`${at(['successor'])}: names successor '${m.successor}' but no sale_ends date (a successor takes over when the sale ends)`);
  return out;
}

function checkTextPricing(m: ModelEntry, at: Locate): string[] {
  const out: string[] = [];
  const p = m.pricing;
  if (p.input === undefined || p.output === undefined) out.push(`${at(['pricing'])}: text model without input and output prices`);
  if (!m.max_output) out.push(`${at([])}: text model without max_output (the reservation needs an upper bound)`);
  if (m.context_window && m.max_output && m.max_output > m.context_window) {
    out.push(`${at(['max_output'])}: max_output ${m.max_output} exceeds the context window ${m.context_window}`);
  }
  let previous = 0;
  (p.tiers ?? []).forEach((tier, i) => {
    const where = at(['pricing', 'tiers', i]);
    if (tier.above_input_tokens <= previous) out.push(`${where}: tier thresholds must rise (${tier.above_input_tokens})`);
    if (m.context_window && tier.above_input_tokens >= m.context_window) {
      out.push(`${where}: tier threshold ${tier.above_input_tokens} is not below the context window ${m.context_window}`);
    }
    if (tier.input < (p.input ?? 0) || tier.output < (p.output ?? 0)) {
      out.push(`${where}: tier above ${tier.above_input_tokens} is priced below the base price`);
    }
    previous = tier.above_input_tokens;
  });
  return out;
}
