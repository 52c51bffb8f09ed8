// Evaluates the refusal conditions written in YAML against a request body and headers.
import type { Condition, Refusal } from '../core/call.ts';
import type { JsonObject, JsonValue } from '../core/types.ts';

export interface RequestView {
  body: JsonObject;
  headers: Record<string, string | string[] | undefined>;
}

/** The value that made the condition hold (for `{value}` in the sentence), or undefined when it does not. */
export function matchCondition(cond: Condition, req: RequestView): { value: JsonValue } | undefined {
  if ('all' in cond) {
    let last: { value: JsonValue } | undefined;
    for (const c of cond.all) {
      last = matchCondition(c, req);
      if (!last) return undefined;
    }
    return last ?? { value: null };
  }
  if ('any' in cond) {
    for (const c of cond.any) {
      const hit = matchCondition(c, req);
      if (hit) return hit;
    }
    return undefined;
  }
  if ('header' in cond) {
    const raw = req.headers[cond.header.toLowerCase()];
    const value = Array.isArray(raw) ? raw.join(',') : raw;
    return value !== undefined && new RegExp(cond.matches, 'i').test(value) ? { value } : undefined;
  }
  if ('tool_type' in cond) return matchToolType(cond.tool_type, req.body);
  const value = valueAt(req.body, cond.param);
  const present = value !== undefined;
  if ('present' in cond) return present === cond.present ? { value: value ?? null } : undefined;
  if (!present) return 'not_equals' in cond ? { value: null } : undefined;
  if ('equals' in cond) return value === cond.equals ? { value } : undefined;
  if ('not_equals' in cond) return value !== cond.not_equals ? { value } : undefined;
  if ('in' in cond) return cond.in.includes(value as never) ? { value } : undefined;
  return !cond.not_in.includes(value as never) ? { value } : undefined;
}

/** The first refusal that applies, with its sentence filled in. */
export function firstRefusal(refusals: Refusal[], req: RequestView): { refusal: Refusal; message: string } | undefined {
  for (const refusal of refusals) {
    const hit = matchCondition(refusal.when, req);
    if (hit) return { refusal, message: refusal.say.replaceAll('{value}', displayValue(hit.value)) };
  }
  return undefined;
}

function matchToolType(rule: { in: string[] } | { not_in: string[] }, body: JsonObject): { value: JsonValue } | undefined {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  for (const tool of tools) {
    if (!tool || typeof tool !== 'object' || Array.isArray(tool)) continue;
    const type = tool.type;
    // A tool without a type is user-defined in the native format: never a server tool.
    if (typeof type !== 'string') continue;
    const listed = ('in' in rule ? rule.in : rule.not_in).some((p) => matchesPattern(p, type));
    if ('in' in rule ? listed : !listed) return { value: type };
  }
  return undefined;
}

const matchesPattern = (pattern: string, value: string) =>
  pattern.endsWith('*') ? value.startsWith(pattern.slice(0, -1)) : value === pattern;

function valueAt(body: JsonObject, path: string): JsonValue | undefined {
  let node: JsonValue | undefined = body;
  for (const key of path.split('.')) {
    if (!node || typeof node !== 'object' || Array.isArray(node)) return undefined;
    node = node[key];
  }
  return node === undefined ? undefined : node;
}

const displayValue = (v: JsonValue) => (typeof v === 'string' ? v : JSON.stringify(v));
