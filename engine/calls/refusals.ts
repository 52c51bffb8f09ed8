// Evaluates the refusal conditions written in YAML (door refusals, model rules, caller refusals) against
// a request: its body, its headers and who calls.
import type { GatewayConfig } from '../catalog/config.ts';
import type { Condition, Refusal } from '../core/call.ts';
import { derivedFromText } from '../core/derived.ts';
import { errors, type GatewayError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/types.ts';
import type { Caller } from '../money/accounts.ts';

export interface RequestView {
  body: JsonObject;
  headers: Record<string, string | string[] | undefined>;
  /** Who calls, for `caller` conditions; absent where no key is known (a vendor's own refusals). */
  caller?: Pick<Caller, 'audience'> | undefined;
}

/** What made a condition hold: the offending value (`{value}` in a sentence) and where it sits (`{at}`). */
interface Hit {
  value: JsonValue;
  at: string;
}

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
  const value = valueAt(req.body, cond.param);
  const at = cond.param;
  const present = value !== undefined;
  if ('present' in cond) return present === cond.present ? { value: value ?? null, at } : undefined;
  if (!present) return 'not_equals' in cond ? { value: null, at } : undefined;
  if ('equals' in cond) return value === cond.equals ? { value, at } : undefined;
  if ('not_equals' in cond) return value !== cond.not_equals ? { value, at } : undefined;
  if ('in' in cond) return cond.in.includes(value as never) ? { value, at } : undefined;
  return !cond.not_in.includes(value as never) ? { value, at } : undefined;
}

/** The first refusal that applies, with its sentence filled in. */
export function firstRefusal(refusals: Refusal[], req: RequestView): { refusal: Refusal; message: string } | undefined {
  for (const refusal of refusals) {
    const hit = matchCondition(refusal.when, req);
    if (hit) return { refusal, message: refusal.say.replaceAll('{value}', displayValue(hit.value)).replaceAll('{at}', hit.at) };
  }
  return undefined;
}

/** The error for the first refusal that applies: its status (400 unless stated) and the type that status means. */
export function refusalError(refusals: Refusal[], req: RequestView): GatewayError | undefined {
  const hit = firstRefusal(refusals, req);
  return hit && errors.refused(hit.refusal.status ?? 400, hit.message);
}

/** The caller refusals (config/callers.yaml) checked on a door. */
export const callerRefusals = (cfg: GatewayConfig, door: string): Refusal[] =>
  cfg.callers.refuse.filter((r) => !r.doors || r.doors.includes(door));

/** Whether a caller refusal shuts this caller out of a door whatever the request (GET /v1/models hides such doors). */
export const doorClosedTo = (cfg: GatewayConfig, door: string, caller: RequestView['caller']): boolean =>
  firstRefusal(callerRefusals(cfg, door), { body: {}, headers: {}, caller }) !== undefined;

type ToolTypeCondition = Extract<Condition, { tool_type: unknown }>['tool_type'];

function matchToolType(rule: ToolTypeCondition, body: JsonObject): Hit | undefined {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const patterns = 'in' in rule ? rule.in : rule.not_in;
  const fold = (s: string) => (rule.ignore_case ? s.toLowerCase() : s);
  for (const [i, tool] of tools.entries()) {
    if (!tool || typeof tool !== 'object' || Array.isArray(tool)) continue;
    const type = tool.type;
    // A tool without a type is user-defined in the native format: never a server tool.
    if (typeof type !== 'string') continue;
    const listed = patterns.some((p) => matchesPattern(fold(p), fold(type)));
    if ('in' in rule ? listed : !listed) return { value: type, at: `tools[${i}].type` };
  }
  return undefined;
}

const matchesPattern = (pattern: string, value: string) =>
  pattern.endsWith('*') ? value.startsWith(pattern.slice(0, -1)) : value === pattern;

const pathSteps = derivedFromText((path) => path.split('.'));
const caselessPattern = derivedFromText((source) => new RegExp(source, 'i'));

/** A dotted path into the body; a numeric step indexes a list (`mcp_servers.0`: a non-empty list). */
function valueAt(body: JsonObject, path: string): JsonValue | undefined {
  let node: JsonValue | undefined = body;
  for (const key of pathSteps(path)) {
    if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)];
    else if (!node || typeof node !== 'object' || Array.isArray(node)) return undefined;
    else node = node[key];
  }
  return node === undefined ? undefined : node;
}

const displayValue = (v: JsonValue) => (typeof v === 'string' ? v : JSON.stringify(v));
