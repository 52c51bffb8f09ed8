// The one native cache_control shape: {type:'ephemeral'} with an optional ttl of '5m' or '1h'.
// Anything else a client writes is either brought to that shape (extra keys removed) or refused,
// so a ttl the vendor would reject is never sent (it answers 400) and a breakpoint is never dropped silently
// (the client would pay full input price without knowing why).
import type { JsonObject, JsonValue } from '../../engine/core/types.ts';
import { bad, isObject } from './json.ts';

const NATIVE_TTLS = ['5m', '1h'] as const;

export function nativeCacheControl(cc: JsonValue | undefined, where: string): JsonObject | undefined {
  if (cc === undefined || cc === null) return undefined;
  if (!isObject(cc)) throw bad(`cache_control at ${where} must be an object such as {"type":"ephemeral"}.`, 'cache_control');
  const type = cc.type ?? 'ephemeral';
  if (type !== 'ephemeral') {
    throw bad(`cache_control at ${where} has type '${String(type)}'; only 'ephemeral' is supported.`, 'cache_control');
  }
  const out: JsonObject = { type: 'ephemeral' };
  if (cc.ttl !== undefined && cc.ttl !== null) {
    if (typeof cc.ttl !== 'string' || !(NATIVE_TTLS as readonly string[]).includes(cc.ttl)) {
      throw bad(`cache_control.ttl at ${where} must be '5m' or '1h'; got ${JSON.stringify(cc.ttl)}.`, 'cache_control');
    }
    out.ttl = cc.ttl;
  }
  return out;
}

/** Copy a part's cache_control onto a native block, unchanged (carry-cache-control normalises later). */
export function withCacheControl<B extends object>(block: B, from: JsonObject): B {
  if (from.cache_control !== undefined && from.cache_control !== null)
    (block as { cache_control?: JsonValue }).cache_control = from.cache_control;
  return block;
}
