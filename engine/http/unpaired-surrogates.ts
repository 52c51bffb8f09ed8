// A lone UTF-16 surrogate in JSON is refused where every body is read: PostgreSQL refuses it in jsonb and changes it
// in text, so a field kept for later would fail after its hold or come back changed.
import { errors, type GatewayError, hasUnpairedSurrogate } from '../core/errors.ts';

/** An object or array being walked: its keys (null for an array) and the position of the child visited last. */
interface Level {
  container: Record<string, unknown> | unknown[];
  keys: string[] | null;
  at: number;
}

/**
 * The path of the first string (value or key) in `value` holding an unpaired surrogate, or null. An object's keys
 * are all read before its values, the last such key named first.
 */
export function fieldWithUnpairedSurrogate(value: unknown): string | null {
  if (typeof value === 'string') return hasUnpairedSurrogate(value) ? 'body' : null;
  // An explicit stack, like the depth bound's walk: it runs before that bound is known to hold. It keeps where
  // each level is, and the path is written from it only when a surrogate is found.
  const levels: Level[] = [];
  let badKey = enter(levels, value);
  while (badKey === null && levels.length > 0) {
    const level = levels[levels.length - 1]!;
    level.at++;
    const { container, keys, at } = level;
    if (at >= (keys ?? (container as unknown[])).length) {
      levels.pop();
      continue;
    }
    const child = keys ? (container as Record<string, unknown>)[keys[at]!] : (container as unknown[])[at];
    if (typeof child === 'string') {
      if (hasUnpairedSurrogate(child)) return pathOf(levels);
    } else badKey = enter(levels, child);
  }
  return badKey === null ? null : pathOf(levels, badKey);
}

/**
 * Pushes an object or array to walk; returns the key of an object that holds an unpaired surrogate (the last such),
 * to be named without walking further.
 */
function enter(levels: Level[], value: unknown): string | null {
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    levels.push({ container: value, keys: null, at: -1 });
    return null;
  }
  const keys = Object.keys(value);
  for (let i = keys.length - 1; i >= 0; i--) if (hasUnpairedSurrogate(keys[i]!)) return keys[i]!;
  levels.push({ container: value as Record<string, unknown>, keys, at: -1 });
  return null;
}

/** The path of the child each level is at (`messages[0].content`), then `lastKey` when given. */
function pathOf(levels: Level[], lastKey?: string): string {
  let path = '';
  for (const { keys, at } of levels) path = keys ? (path ? `${path}.${keys[at]}` : keys[at]!) : `${path}[${at}]`;
  if (lastKey !== undefined) path = path ? `${path}.${lastKey}` : lastKey;
  return path;
}

/** The 400 naming the field for a body with an unpaired surrogate, or null when all its text is text. */
export function unpairedSurrogateRefusal(body: unknown): GatewayError | null {
  const field = fieldWithUnpairedSurrogate(body);
  if (field === null) return null;
  return errors.invalidRequest(`${field} contains an unpaired UTF-16 surrogate, which is not text; send it as valid Unicode.`, field);
}
