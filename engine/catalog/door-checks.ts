// What config/doors.yaml must hold against the wire formats (transforms/protocols/) and the settlement table:
// every format a door names exists and declares a chain for the door, and each chain suits its vendors, its format
// and its billing kind. A chain that breaks one of these would serve calls it cannot bill.
import { protocols } from '../../transforms/protocols/index.ts';
import type { Chain, ChainNeed, Protocol } from '../core/protocol.ts';
import type { ChainNeeds } from '../core/schema-types.ts';
import type { ModelEntry, VendorId } from '../core/types.ts';
import { type DoorConfig, type GatewayConfig, protocolNameFor, type RuleConfig } from './config.ts';
import { resolveRules } from './rules.ts';
import { errorBodyNamed, wireNamed } from './wire-format.ts';
import type { Locate } from './yaml-file.ts';

/** The transform that applies a model's rule effects (drops, lowered tool choices) to the body. */
const MODEL_RULES_STEP = 'model-rules';

/** A format a door names, with where the door names it and how its problems are labelled. */
interface Reached {
  format: string;
  chain: Chain;
  wire: Protocol;
  at: string;
  label: string;
}

const runs = (chain: Chain, step: string) => chain.request.some((s) => s.name === step);

/** Where `door` names the format `vendor` speaks: the vendor's own entry, else `'*'`. */
const entryOf = (door: DoorConfig, vendor: VendorId) => (Object.hasOwn(door.vendor_protocol, vendor) ? vendor : '*');

/** `doors` and `billing` place values in config/doors.yaml and config/billing.yaml. */
export function doorProblems(cfg: GatewayConfig, doors: Locate, billing: Locate): string[] {
  const problems = settlementNameProblems(cfg, billing);
  for (const door of Object.values(cfg.doors)) {
    const { reached, problems: choice } = reachedFormats(door, doors);
    problems.push(...choice, ...errorBodyProblems(door, doors));
    problems.push(...outputCapProblems(cfg, door, reached));
    for (const r of reached.values()) {
      problems.push(...settlementProblems(cfg, door, r, doors));
      problems.push(...wireProblems(r));
    }
  }
  return problems;
}

/** The door's `errors` names a format that declares the error body its clients read. */
function errorBodyProblems(door: DoorConfig, at: Locate): string[] {
  if (errorBodyNamed(door.errors)) return [];
  const why = Object.hasOwn(protocols, door.errors) ? 'declares no error body its clients read' : 'is not a wire format';
  const declaring = Object.entries(protocols).flatMap(([name, p]) => (p.errors.body ? [name] : []));
  return [
    `${at([door.name, 'errors'])}: door '${door.name}' errors '${door.errors}' ${why}: formats that declare one are ${declaring.join(', ')}`,
  ];
}

/** Every format a door names is one, declares a chain for the door, and every vendor the door serves speaks one. */
function reachedFormats(door: DoorConfig, at: Locate): { reached: Map<string, Reached>; problems: string[] } {
  const problems: string[] = [];
  const reached = new Map<string, Reached>();
  for (const [vendor, format] of Object.entries(door.vendor_protocol)) {
    const where = at([door.name, 'vendor_protocol', vendor]);
    const label = `door '${door.name}' protocol '${format}'`;
    const found = wireNamed(door, format);
    if (found) {
      if (!reached.has(format)) reached.set(format, { format, chain: found.chain, wire: found.wire, at: where, label });
    } else if (!Object.hasOwn(protocols, format)) {
      problems.push(`${where}: ${label}: '${format}' is not a wire format (transforms/protocols/index.ts)`);
    } else {
      problems.push(
        `${where}: ${label}: the format declares no chain for door '${door.name}' (its chains in transforms/protocols/): doors it declares are ${Object.keys(protocols[format]!.chains).join(', ')}`,
      );
    }
  }
  for (const vendor of door.serves.vendors) {
    if (!protocolNameFor(door, vendor)) {
      problems.push(`${at([door.name, 'vendor_protocol'])}: door '${door.name}' serves vendor ${vendor} but names no protocol for it`);
    }
  }
  return { reached, problems };
}

/** The step that writes billing.yaml `reservation.output_cap_written` into a body. */
const OUTPUT_CAP_STEP = 'cap-output';

/** A vendor whose output the chains must cap (billing.yaml) runs the step on every token-billed door serving it. */
function outputCapProblems(cfg: GatewayConfig, door: DoorConfig, reached: Map<string, Reached>): string[] {
  if (door.billing !== 'tokens') return [];
  const capped = cfg.billing.reservation.output_cap_written ?? {};
  return door.serves.vendors.flatMap((vendor) => {
    const name = capped[vendor] ? protocolNameFor(door, vendor) : undefined;
    const r = name ? reached.get(name) : undefined;
    if (!r || runs(r.chain, OUTPUT_CAP_STEP)) return [];
    return [
      `${r.at}: ${r.label} serves vendor ${vendor} but its chain does not run '${OUTPUT_CAP_STEP}': config/billing.yaml reservation.output_cap_written lists the vendor, whose servers give more output than the hold covers unless told`,
    ];
  });
}

/** What the door's billing kind needs of the chain (config/billing.yaml settlement). */
function settlementProblems(cfg: GatewayConfig, door: DoorConfig, r: Reached, doors: Locate): string[] {
  const needs = cfg.billing.settlement.billing[door.billing];
  if (!needs) {
    return [
      `${doors([door.name, 'billing'])}: door '${door.name}' bills by ${door.billing}, which config/billing.yaml settlement.billing does not list`,
    ];
  }
  const problems = missingSteps(needs, r.chain).map(
    (step) => `${r.at}: ${r.label}: its chain must run '${step}': the door bills by ${door.billing} (config/billing.yaml settlement)`,
  );
  if (needs.usage_reader && !r.chain.usage) {
    problems.push(
      `${r.at}: ${r.label}: its chain names no usage reader: the door bills by ${door.billing}, from the usage the vendor reports`,
    );
  }
  return problems;
}

/** What the chain's wire format needs of every chain to it, and of one that streams (transforms/protocols/). */
function wireProblems(r: Reached): string[] {
  const needs = [r.wire.needs, r.chain.stream ? r.wire.streamNeeds : undefined].filter((n): n is ChainNeed => n !== undefined);
  return needs.flatMap((need) =>
    missingSteps(need, r.chain).map(
      (step) => `${r.at}: ${r.label}: its chain reaches '${r.format}' but does not run '${step}': ${need.why} (transforms/protocols/)`,
    ),
  );
}

const missingSteps = (needs: ChainNeeds | ChainNeed, chain: Chain) => (needs.request ?? []).filter((s) => !runs(chain, s));

/** Every request step some format's chain runs, by name. */
const knownSteps = (): Set<string> =>
  new Set(Object.values(protocols).flatMap((p) => Object.values(p.chains).flatMap((c) => c.request.map((s) => s.name))));

/** A step the settlement table requires must be one some chain runs, or no chain could ever satisfy it. */
function settlementNameProblems(cfg: GatewayConfig, billing: Locate): string[] {
  const problems: string[] = [];
  const known = knownSteps();
  for (const [group, table] of Object.entries(cfg.billing.settlement)) {
    for (const [key, needs] of Object.entries(table as Record<string, ChainNeeds>)) {
      (needs.request ?? []).forEach((step, i) => {
        if (!known.has(step)) {
          problems.push(
            `${billing(['settlement', group, key, 'request', i])}: '${step}' is not a request step any format's chain runs (transforms/protocols/)`,
          );
        }
      });
    }
  }
  return problems;
}

/**
 * A model's rules that change the body (drops, lowered tool choices) and its door's rewrites act only in a chain
 * that runs `model-rules`: every door serving the model, on the format its vendor speaks there, must run it.
 * `modelAt` places a model in its catalog file.
 */
export function modelRuleProblems(
  cfg: GatewayConfig,
  models: Iterable<ModelEntry>,
  doors: Locate,
  modelAt: (m: ModelEntry) => string,
): string[] {
  const unapplied = new Map<string, { door: string; entry: string; protocol: string; rules: Set<string>; models: string[] }>();
  for (const model of models) {
    for (const doorName of model.doors) {
      if (!Object.hasOwn(cfg.doors, doorName)) continue; // model-checks.ts reports it
      const door = cfg.doors[doorName]!;
      const protocolName = protocolNameFor(door, model.vendor);
      const chain = protocolName ? wireNamed(door, protocolName)?.chain : undefined;
      if (!chain || runs(chain, MODEL_RULES_STEP)) continue;
      const resolved = resolveRules(model, doorName, cfg);
      const acting = [
        ...resolved.names.filter((name) => changesBody(cfg.rules[name])),
        ...resolved.rewrites.map((r) => `rewrite of ${r.param}`),
      ];
      if (acting.length === 0) continue;
      const key = `${doorName}/${protocolName}`;
      const entry = unapplied.get(key) ?? {
        door: doorName,
        entry: entryOf(door, model.vendor),
        protocol: protocolName!,
        rules: new Set<string>(),
        models: [],
      };
      acting.forEach((r) => entry.rules.add(r));
      entry.models.push(`${model.id} (${modelAt(model)})`);
      unapplied.set(key, entry);
    }
  }
  return [...unapplied.values()].map(({ door, entry, protocol, rules, models: ids }) => {
    const names = [...rules].map((r) => `'${r}'`).join(', ');
    return `${doors([door, 'vendor_protocol', entry])}: door '${door}' protocol '${protocol}': its chain does not run '${MODEL_RULES_STEP}', so rule ${names} would not apply to ${ids.join(', ')}`;
  });
}

const changesBody = (rule: RuleConfig | undefined) => (rule?.drops?.length ?? 0) > 0 || rule?.lowers_forced_tool_choice === true;
