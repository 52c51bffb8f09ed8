// What config/doors.yaml must hold against the transforms, the wire formats and the settlement table: every
// protocol and step a chain names exists and suits its vendors and billing kind. A chain that breaks one of these
// would serve calls it cannot bill.
import * as registry from '../../transforms/index.ts';
import type { ChainNeed, Protocol } from '../core/protocol.ts';
import type { ChainNeeds } from '../core/schema-types.ts';
import type { ModelEntry } from '../core/types.ts';
import { type DoorConfig, type GatewayConfig, type ProtocolConfig, protocolNameFor, type RuleConfig } from './config.ts';
import { resolveRules } from './rules.ts';
import { wireName } from './wire-format.ts';
import type { Locate } from './yaml-file.ts';

/** The transform that applies a model's rule effects (drops, lowered tool choices) to the body. */
const MODEL_RULES_STEP = 'model-rules';

const SINGLE_STEPS = {
  answer: { names: registry.answerTransforms, what: 'an answer transform' },
  stream: { names: registry.streamTranslators, what: 'a stream translator' },
  usage: { names: registry.usageReaders, what: 'a usage reader' },
} as const;

/** `doors` and `billing` place values in config/doors.yaml and config/billing.yaml. */
export function doorProblems(cfg: GatewayConfig, doors: Locate, billing: Locate): string[] {
  const problems = settlementNameProblems(cfg, billing);
  for (const door of Object.values(cfg.doors)) {
    problems.push(...protocolChoiceProblems(door, doors));
    problems.push(...outputCapProblems(cfg, door, doors));
    for (const [name, protocol] of Object.entries(door.protocols)) {
      const at = (...path: (string | number)[]) => doors([door.name, 'protocols', name, ...path]);
      const label = `door '${door.name}' protocol '${name}'`;
      problems.push(...stepProblems(protocol, label, at));
      problems.push(...settlementProblems(cfg, door, protocol, label, at, doors));
      const wire = wireName(name, protocol);
      if (Object.hasOwn(registry.protocols, wire)) problems.push(...wireProblems(wire, registry.protocols[wire]!, protocol, label, at));
      else
        problems.push(
          `${at(...(protocol.speaks ? ['speaks'] : []))}: ${label}: '${wire}' is not a wire format (transforms/protocols/index.ts)`,
        );
    }
  }
  return problems;
}

/** Every protocol a door names exists, and every vendor the door serves speaks one. */
function protocolChoiceProblems(door: DoorConfig, at: Locate): string[] {
  const problems: string[] = [];
  for (const [vendor, protocol] of Object.entries(door.vendor_protocol)) {
    if (!door.protocols[protocol]) {
      problems.push(
        `${at([door.name, 'vendor_protocol', vendor])}: door '${door.name}' names protocol '${protocol}', which it does not define`,
      );
    }
  }
  for (const vendor of door.serves.vendors) {
    if (!protocolNameFor(door, vendor)) {
      problems.push(`${at([door.name, 'vendor_protocol'])}: door '${door.name}' serves vendor ${vendor} but names no protocol for it`);
    }
  }
  return problems;
}

/** The step that writes billing.yaml `reservation.output_cap_written` into a body. */
const OUTPUT_CAP_STEP = 'cap-output';

/** A vendor whose output the chains must cap (billing.yaml) runs the step on every token-billed door serving it. */
function outputCapProblems(cfg: GatewayConfig, door: DoorConfig, at: Locate): string[] {
  if (door.billing !== 'tokens') return [];
  const capped = cfg.billing.reservation.output_cap_written ?? {};
  return door.serves.vendors.flatMap((vendor) => {
    const name = capped[vendor] ? protocolNameFor(door, vendor) : undefined;
    const protocol = name ? door.protocols[name] : undefined;
    if (!protocol || protocol.request.includes(OUTPUT_CAP_STEP)) return [];
    return [
      `${at([door.name, 'protocols', name!, 'request'])}: door '${door.name}' protocol '${name}' serves vendor ${vendor} but does not run '${OUTPUT_CAP_STEP}': config/billing.yaml reservation.output_cap_written lists the vendor, whose servers give more output than the hold covers unless told`,
    ];
  });
}

function stepProblems(protocol: ProtocolConfig, label: string, at: (...path: (string | number)[]) => string): string[] {
  const problems: string[] = [];
  protocol.request.forEach((step, i) => {
    if (!Object.hasOwn(registry.requestTransforms, step)) {
      problems.push(`${at('request', i)}: ${label}: request step '${step}' is not a request transform (transforms/index.ts)`);
    }
  });
  for (const [field, { names, what }] of Object.entries(SINGLE_STEPS)) {
    const step = protocol[field as keyof typeof SINGLE_STEPS];
    if (step !== undefined && !Object.hasOwn(names, step))
      problems.push(`${at(field)}: ${label}: ${field} '${step}' is not ${what} (transforms/index.ts)`);
  }
  return problems;
}

/** What the door's billing kind needs of the chain (config/billing.yaml settlement). */
function settlementProblems(
  cfg: GatewayConfig,
  door: DoorConfig,
  protocol: ProtocolConfig,
  label: string,
  at: (...path: (string | number)[]) => string,
  doors: Locate,
): string[] {
  const needs = cfg.billing.settlement.billing[door.billing];
  if (!needs) {
    return [
      `${doors([door.name, 'billing'])}: door '${door.name}' bills by ${door.billing}, which config/billing.yaml settlement.billing does not list`,
    ];
  }
  const problems = missingSteps(needs, protocol).map(
    (step) => `${at('request')}: ${label} must run '${step}': the door bills by ${door.billing} (config/billing.yaml settlement)`,
  );
  if (needs.usage_reader && !protocol.usage) {
    problems.push(`${at()}: ${label} names no usage reader: the door bills by ${door.billing}, from the usage the vendor reports`);
  }
  return problems;
}

/** What the chain's wire format needs of every chain to it, and of one that streams (transforms/protocols/). */
function wireProblems(
  format: string,
  wire: Protocol,
  protocol: ProtocolConfig,
  label: string,
  at: (...path: string[]) => string,
): string[] {
  const needs = [wire.needs, protocol.stream ? wire.streamNeeds : undefined].filter((n): n is ChainNeed => n !== undefined);
  return needs.flatMap((need) =>
    missingSteps(need, protocol).map(
      (step) => `${at('request')}: ${label} reaches '${format}' but does not run '${step}': ${need.why} (transforms/protocols/)`,
    ),
  );
}

const missingSteps = (needs: ChainNeeds | ChainNeed, protocol: ProtocolConfig) =>
  (needs.request ?? []).filter((s) => !protocol.request.includes(s));

/** A step the settlement table requires must be a transform, or no chain could ever satisfy it. */
function settlementNameProblems(cfg: GatewayConfig, billing: Locate): string[] {
  const problems: string[] = [];
  for (const [group, table] of Object.entries(cfg.billing.settlement)) {
    for (const [key, needs] of Object.entries(table as Record<string, ChainNeeds>)) {
      (needs.request ?? []).forEach((step, i) => {
        if (!Object.hasOwn(registry.requestTransforms, step)) {
          problems.push(`${billing(['settlement', group, key, 'request', i])}: '${step}' is not a request transform (transforms/index.ts)`);
        }
      });
    }
  }
  return problems;
}

/**
 * A model's rules that change the body (drops, lowered tool choices) act only in a chain that runs
 * `model-rules`: every door serving the model, on the protocol its vendor speaks there, must run it.
 * `modelAt` places a model in its catalog file.
 */
export function modelRuleProblems(
  cfg: GatewayConfig,
  models: Iterable<ModelEntry>,
  doors: Locate,
  modelAt: (m: ModelEntry) => string,
): string[] {
  const unapplied = new Map<string, { door: string; protocol: string; rules: Set<string>; models: string[] }>();
  for (const model of models) {
    for (const doorName of model.doors) {
      if (!Object.hasOwn(cfg.doors, doorName)) continue; // model-checks.ts reports it
      const door = cfg.doors[doorName];
      const protocolName = protocolNameFor(door, model.vendor);
      const protocol = protocolName ? door.protocols[protocolName] : undefined;
      if (!protocol || protocol.request.includes(MODEL_RULES_STEP)) continue;
      const acting = resolveRules(model, doorName, cfg).names.filter((name) => changesBody(cfg.rules[name]));
      if (acting.length === 0) continue;
      const key = `${doorName}/${protocolName}`;
      const entry = unapplied.get(key) ?? { door: doorName, protocol: protocolName!, rules: new Set<string>(), models: [] };
      acting.forEach((r) => entry.rules.add(r));
      entry.models.push(`${model.id} (${modelAt(model)})`);
      unapplied.set(key, entry);
    }
  }
  return [...unapplied.values()].map(({ door, protocol, rules, models: ids }) => {
    const names = [...rules].map((r) => `'${r}'`).join(', ');
    return `${doors([door, 'protocols', protocol, 'request'])}: door '${door}' protocol '${protocol}' does not run '${MODEL_RULES_STEP}', so rule ${names} would not apply to ${ids.join(', ')}`;
  });
}

const changesBody = (rule: RuleConfig | undefined) => (rule?.drops?.length ?? 0) > 0 || rule?.lowers_forced_tool_choice === true;
