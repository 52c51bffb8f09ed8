// Evaluates the refusal conditions written in YAML (door refusals, model rules, caller refusals) against
// a request: its body, its headers and who calls.
import type { DoorConfig, GatewayConfig } from '../catalog/config.ts';
import { resolveRules } from '../catalog/rules.ts';
import { everyFormatsTools } from '../catalog/wire-format.ts';
import type { Condition, Refusal, ResolvedRules } from '../core/call.ts';
import { derivedFrom, derivedFromText } from '../core/derived.ts';
import { errors, type GatewayError } from '../core/errors.ts';
import type { JsonObject, JsonValue, ModelEntry } from '../core/types.ts';
import type { Caller } from '../money/accounts.ts';

export interface RequestView {
  body: JsonObject;
  headers: Record<string, string | string[] | undefined>;
  /** Who calls, for `caller` conditions; absent where no key is known (a vendor's own refusals). */
  caller?: Pick<Caller, 'audience'> | undefined;
}

/**
 * What made a condition hold: the offending value (`{value}` in a sentence) and where it sits (`{at}`); `param` when
 * that is a body field, which the error names so a client's SDK can point at it.
 */
interface Hit {
  value: JsonValue;
  at: string;
  param?: string;
}

/** A hit on a body field: it sits where the error's `param` names. */
const fieldHit = (value: JsonValue, at: string): Hit => ({ value, at, param: at });

/** What made the condition hold, or undefined when it does not. */
function matchCondition(cond: Condition, req: RequestView): Hit | undefined {
  if ('all' in cond) {
    let last: Hit | undefined;
    for (const c of cond.all) {
      last = matchCondition(c, req);
      if (!last) return undefined;
    }
    return last ?? { value: null, at: '' };
  }
  if ('any' in cond) {
    for (const c of cond.any) {
      const hit = matchCondition(c, req);
      if (hit) return hit;
    }
    return undefined;
  }
  if ('caller' in cond) {
    const audience = req.caller?.audience;
    return audience && audience === cond.caller.audience ? { value: audience, at: 'audience' } : undefined;
  }
  if ('header' in cond) {
    const raw = req.headers[cond.header.toLowerCase()];
    const value = Array.isArray(raw) ? raw.join(',') : raw;
    return value !== undefined && caselessPattern(cond.matches).test(value) ? { value, at: cond.header } : undefined;
  }
  if ('tool_type' in cond) return matchToolType(cond.tool_type, req.body);
  const steps = pathSteps(cond.param);
  // Most paths name one place: no list of places is made for them on every call.
  if (!cond.param.includes('*')) return matchValue(cond, valueAt(req.body, steps), cond.param);
  return matchAtEvery(cond, req.body, steps, 0, '');
}

type ParamCondition = Extract<Condition, { param: string }>;

/** Whether a body field's value (undefined when absent) meets a `param` condition. */
function matchValue(cond: ParamCondition, value: JsonValue | undefined, at: string): Hit | undefined {
  const present = value !== undefined;
  if ('present' in cond) return present === cond.present ? fieldHit(value ?? null, at) : undefined;
  if (!present) return 'not_equals' in cond ? fieldHit(null, at) : undefined;
  if ('equals' in cond) return value === cond.equals ? fieldHit(value, at) : undefined;
  if ('not_equals' in cond) return value !== cond.not_equals ? fieldHit(value, at) : undefined;
  if ('in' in cond) return cond.in.includes(value as never) ? fieldHit(value, at) : undefined;
  return !cond.not_in.includes(value as never) ? fieldHit(value, at) : undefined;
}

/** The first refusal that applies, with its sentence filled in and the body field it is about, if any. */
export function firstRefusal(
  refusals: readonly Refusal[],
  req: RequestView,
): { refusal: Refusal; message: string; param: string | undefined } | undefined {
  for (const refusal of refusals) {
    const hit = matchCondition(refusal.when, req);
    if (!hit) continue;
    const message = refusal.say.replaceAll('{value}', displayValue(hit.value)).replaceAll('{at}', hit.at);
    return { refusal, message, param: hit.param };
  }
  return undefined;
}

/** The error for the first refusal that applies: its status (400 unless stated), the type that status means, its field. */
export function refusalError(refusals: readonly Refusal[], req: RequestView): GatewayError | undefined {
  const hit = firstRefusal(refusals, req);
  return hit && errors.refused(hit.refusal.status ?? 400, hit.message, hit.param);
}

/** Each door's caller refusals, listed once per loaded config. */
const callerRefusalsByDoor = derivedFrom((_cfg: GatewayConfig) => new Map<string, readonly Refusal[]>());

/** The caller refusals (config/callers.yaml) checked on a door. */
export function callerRefusals(cfg: GatewayConfig, door: string): readonly Refusal[] {
  const byDoor = callerRefusalsByDoor(cfg);
  let found = byDoor.get(door);
  if (!found) byDoor.set(door, (found = cfg.callers.refuse.filter((r) => !r.doors || r.doors.includes(door))));
  return found;
}

/** A model's rules on a door, and every refusal a call there is checked against, in the order they are tried. */
interface DoorModelRules {
  readonly rules: ResolvedRules;
  readonly refusals: readonly Refusal[];
}

/**
 * Keyed by the loaded config, then its door and the catalog's model entry: a reload makes new objects of all
 * three, so a call never sees the rules of another load. Shared by every call on that load, so never changed.
 */
const rulesByDoor = derivedFrom((_cfg: GatewayConfig) => new WeakMap<DoorConfig, WeakMap<ModelEntry, DoorModelRules>>());

/** The rules and refusals of `model` on `door`, worked out once per loaded config. */
export function doorModelRules(cfg: GatewayConfig, door: DoorConfig, model: ModelEntry): DoorModelRules {
  const byDoor = rulesByDoor(cfg);
  let byModel = byDoor.get(door);
  if (!byModel) byDoor.set(door, (byModel = new WeakMap()));
  let found = byModel.get(model);
  if (!found) {
    const rules = resolveRules(model, door.name, cfg);
    const doorRefusals = door.refuse.filter((r) => !r.vendors || r.vendors.includes(model.vendor));
    found = { rules, refusals: [...doorRefusals, ...rules.refusals, ...callerRefusals(cfg, door.name)] };
    byModel.set(model, found);
  }
  return found;
}

/** Whether a caller refusal shuts this caller out of a door whatever the request (GET /v1/models hides such doors). */
export const doorClosedTo = (cfg: GatewayConfig, door: string, caller: RequestView['caller']): boolean =>
  firstRefusal(callerRefusals(cfg, door), { body: {}, headers: {}, caller }) !== undefined;

type ToolTypeCondition = Extract<Condition, { tool_type: unknown }>['tool_type'];

function matchToolType(rule: ToolTypeCondition, body: JsonObject): Hit | undefined {
  const reading = everyFormatsTools();
  const tools = reading.toolsOf(body);
  const patterns = 'in' in rule ? rule.in : rule.not_in;
  const fold = (s: string) => (rule.ignore_case ? s.toLowerCase() : s);
  for (let i = 0; i < tools.length; i++) {
    const tool = tools[i];
    if (!tool || typeof tool !== 'object' || Array.isArray(tool)) continue;
    const type = tool.type;
    // A tool without a type is user-defined in the native format: never a server tool.
    if (typeof type !== 'string') continue;
    const listed = patterns.some((p) => matchesPattern(fold(p), fold(type)));
    if ('in' in rule ? listed : !listed) return fieldHit(type, `${reading.pathOf(body, i)}.type`);
  }
  return undefined;
}

const matchesPattern = (pattern: string, value: string) =>
  pattern.endsWith('*') ? value.startsWith(pattern.slice(0, -1)) : value === pattern;

const pathSteps = derivedFromText((path) => path.split('.'));
const caselessPattern = derivedFromText((source) => new RegExp(source, 'i'));

/** One step of a path: a numeric step indexes a list (`mcp_servers.0`: a non-empty list), any other a member. */
function stepInto(node: JsonValue | undefined, key: string): JsonValue | undefined {
  if (Array.isArray(node)) return /^\d+$/.test(key) ? node[Number(key)] : undefined;
  return node && typeof node === 'object' ? node[key] : undefined;
}

/** A dotted path into the body, as its steps. */
function valueAt(body: JsonObject, steps: readonly string[]): JsonValue | undefined {
  let node: JsonValue | undefined = body;
  for (const key of steps) node = stepInto(node, key);
  return node;
}

/**
 * A condition on a path with `*` steps: a `*` is every entry of a list, so `messages.*.content.*.file` reaches each
 * part of each message. It holds when it holds at one of them (`{at}` then names it: `messages[0].content[2].file`),
 * and never where the list is absent.
 */
function matchAtEvery(
  cond: ParamCondition,
  node: JsonValue | undefined,
  steps: readonly string[],
  from: number,
  at: string,
): Hit | undefined {
  let value = node;
  let where = at;
  for (let i = from; i < steps.length; i++) {
    const key = steps[i]!;
    if (key !== '*') {
      value = stepInto(value, key);
      where = where ? `${where}.${key}` : key;
      continue;
    }
    if (!Array.isArray(value)) return undefined;
    for (let n = 0; n < value.length; n++) {
      const hit = matchAtEvery(cond, value[n], steps, i + 1, `${where}[${n}]`);
      if (hit) return hit;
    }
    return undefined;
  }
  return matchValue(cond, value, where);
}

// As JSON, so the client sees the type it sent: background "false" (a string) is refused, false is not.
const displayValue = (v: JsonValue) => JSON.stringify(v);
