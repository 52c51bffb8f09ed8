// Small, total helpers for reading untrusted JSON. Every malformed shape becomes a 400
// invalid_request_error through `bad`, never a TypeError.
import { errors } from '../../engine/core/errors.ts';
import type { JsonObject, JsonValue } from '../../engine/core/types.ts';

export const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A 400 invalid_request_error naming the parameter. */
export const bad = (message: string, param?: string) => errors.invalidRequest(message, param);

export const has = (o: JsonObject, key: string): boolean => Object.hasOwn(o, key) && o[key] !== undefined;

/** Present and not null. */
export const given = (o: JsonObject, key: string): boolean => has(o, key) && o[key] !== null;

export const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/**
 * A count in a vendor's usage figure: a finite number not below zero. Absent is zero; anything else (a negative,
 * a string, NaN) is NaN, which `estimateUnreadable` replaces with an estimate, so a figure that cannot be read
 * is never charged as zero or as a credit.
 */
export const count = (v: unknown): number =>
  v === undefined || v === null ? 0 : typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : NaN;

/** A count every usage figure of the format carries: absent is unreadable too. */
export const requiredCount = (v: unknown): number => (v === undefined || v === null ? NaN : count(v));

/** Parse JSON text, or undefined when it is not JSON. */
export function tryParse(text: string): JsonValue | undefined {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}

export const describe = (v: unknown): string => {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'string' ? `'${v.length > 40 ? `${v.slice(0, 40)}…` : v}'` : typeof v === 'object' ? 'an object' : String(v);
};

/**
 * A deep copy of a parsed JSON body, for the chain to change without touching what the client sent. Plain
 * objects and arrays are copied by hand (structuredClone serializes, and cost more than any transform); a
 * value JSON cannot hold (a form's Buffer) goes through structuredClone. An own `__proto__` key stays a key.
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const v = cloneJson((value as Record<string, unknown>)[key]);
    if (key === '__proto__') Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    else out[key] = v;
  }
  return out as T;
}
