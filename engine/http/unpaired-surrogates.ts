// A lone UTF-16 surrogate in JSON is refused where every body is read: PostgreSQL refuses it in jsonb and changes it
// in text, so a field kept for later would fail after its hold or come back changed.
import { errors, type GatewayError, hasUnpairedSurrogate } from '../core/errors.ts';

/** The path of the first string (value or key) in `value` holding an unpaired surrogate, or null. */
export function fieldWithUnpairedSurrogate(value: unknown): string | null {
  // Nearly no body has one: the walk that writes each field's path runs only for a body that does.
  return holdsUnpairedSurrogate(value) ? firstFieldWithUnpairedSurrogate(value) : null;
}

/**
 * Whether any string (value or key) in `value` holds an unpaired surrogate. An explicit stack, like the depth
 * bound's walk: it runs before that bound is known to hold.
 */
function holdsUnpairedSurrogate(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === 'string') {
      if (hasUnpairedSurrogate(v)) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) pending.push(item);
    } else if (v !== null && typeof v === 'object') {
      for (const key of Object.keys(v)) {
        if (hasUnpairedSurrogate(key)) return true;
        pending.push((v as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

function firstFieldWithUnpairedSurrogate(value: unknown): string | null {
  const pending: { value: unknown; path: string }[] = [{ value, path: '' }];
  while (pending.length > 0) {
    const { value: v, path } = pending.pop()!;
    if (typeof v === 'string') {
      if (hasUnpairedSurrogate(v)) return path || 'body';
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) pending.push({ value: v[i], path: `${path}[${i}]` });
      continue;
    }
    const entries = Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      const childPath = path ? `${path}.${key}` : key;
      if (hasUnpairedSurrogate(key)) return childPath;
      pending.push({ value: child, path: childPath });
    }
  }
  return null;
}

/** The 400 naming the field for a body with an unpaired surrogate, or null when all its text is text. */
export function unpairedSurrogateRefusal(body: unknown): GatewayError | null {
  const field = fieldWithUnpairedSurrogate(body);
  if (field === null) return null;
  return errors.invalidRequest(`${field} contains an unpaired UTF-16 surrogate, which is not text; send it as valid Unicode.`, field);
}
