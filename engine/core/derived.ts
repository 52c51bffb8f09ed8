// What the call path derives from loaded configuration (a field list, a compiled pattern), made once rather
// than on every call. A reload makes new config objects, so anything derived from one is derived again.

/** `derive(config)`, computed once per config object. */
export function derivedFrom<K extends object, V>(derive: (config: K) => V): (config: K) => V {
  const cache = new WeakMap<K, V>();
  return (config) => {
    let v = cache.get(config);
    if (v === undefined) {
      v = derive(config);
      cache.set(config, v);
    }
    return v;
  };
}

/**
 * `derive(text)`, computed once per text. For texts that come from configuration (a few per catalog); past
 * `max` distinct texts the cache starts over, so text from anywhere else cannot grow it without bound.
 */
export function derivedFromText<V>(derive: (text: string) => V, max = 1_000): (text: string) => V {
  const cache = new Map<string, V>();
  return (text) => {
    let v = cache.get(text);
    if (v === undefined) {
      v = derive(text);
      if (cache.size >= max) cache.clear();
      cache.set(text, v);
    }
    return v;
  };
}
