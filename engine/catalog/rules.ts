// Merges the effects of a model's named rules (config/rules.yaml) for one door.
import type { ResolvedRules } from '../core/call.ts';
import type { ModelEntry } from '../core/types.ts';
import type { GatewayConfig } from './config.ts';
import { everyFormatsTools } from './wire-format.ts';

/** A rule by name; own keys only, so a model naming `constructor` finds no rule. */
const ruleNamed = (cfg: GatewayConfig, name: string) => (Object.hasOwn(cfg.rules, name) ? cfg.rules[name] : undefined);

/**
 * The model's named rules on `door`, with the door's own value changes for the model's vendor: both change the
 * body in the `model-rules` step, the one place a body is changed by what config says.
 */
export function resolveRules(model: ModelEntry, door: string, cfg: GatewayConfig): ResolvedRules {
  const rewrites = (Object.hasOwn(cfg.doors, door) ? cfg.doors[door]!.rewrite : []).filter(
    (r) => !r.vendors || r.vendors.includes(model.vendor),
  );
  const out: ResolvedRules = { names: [], drops: [], lowersForcedToolChoice: false, rewrites, refusals: [], vendorRefusals: [] };
  for (const name of model.rules) {
    const rule = ruleNamed(cfg, name);
    if (!rule || (rule.doors && !rule.doors.includes(door))) continue;
    out.names.push(name);
    out.drops.push(...(rule.drops ?? []));
    out.lowersForcedToolChoice ||= rule.lowers_forced_tool_choice ?? false;
    out.refusals.push(...(rule.refuses ?? []));
    out.vendorRefusals.push(...(rule.vendor_refuses ?? []));
  }
  return out;
}

/** The `rules` field of a model record (GET /v1/models): every door's effects, by parameter name. */
export function describeRules(model: ModelEntry, cfg: GatewayConfig) {
  const drops = new Set<string>();
  const refuses = new Set<string>();
  const vendorRefuses = new Set<string>();
  let lowers = false;
  for (const name of model.rules) {
    const rule = ruleNamed(cfg, name);
    if (!rule) continue;
    rule.drops?.forEach((p) => drops.add(p));
    rule.refuses?.forEach((r) => paramsOf(r.when).forEach((p) => refuses.add(p)));
    rule.vendor_refuses?.forEach((r) => paramsOf(r.when).forEach((p) => vendorRefuses.add(p)));
    lowers ||= rule.lowers_forced_tool_choice ?? false;
  }
  return {
    names: model.rules,
    drops: [...drops],
    lowers_forced_tool_choice: lowers,
    refuses: [...refuses],
    vendor_refuses: [...vendorRefuses],
  };
}

type AnyCondition = ResolvedRules['refusals'][number]['when'];

function paramsOf(c: AnyCondition): string[] {
  if ('all' in c) return c.all.flatMap(paramsOf);
  if ('any' in c) return c.any.flatMap(paramsOf);
  if ('tool_type' in c) return [...everyFormatsTools().lists];
  return 'param' in c ? [c.param] : [];
}
