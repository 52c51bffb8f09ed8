// Every vendor format spells its fields in lowercase. A field spelled otherwise (`N`, `MAX_TOKENS`, `ſtream` with a
// long s) is refused: the gateway reads the exact spelling only, while a vendor whose JSON decoder matches names
// regardless of case and compatibility form (Go's, the last key winning) would read it as `n`, `max_tokens` or
// `stream`, and do more than the hold covers or stream an answer the gateway cannot read.
import { isObject } from '../../transforms/util/json.ts';
import { derivedFrom } from '../core/derived.ts';
import { errors } from '../core/errors.ts';
import { everyDeclared, MAX_PART_DEPTH } from '../core/image-parts.ts';
import type { Protocol } from '../core/protocol.ts';
import type { JsonObject, JsonValue } from '../core/types.ts';

const PLAIN_NAME = /^[a-z0-9_]*$/;

/**
 * The lists whose entries' field names the vendor's format defines and where bounds are read (a tool's `max_uses`,
 * a block's `cache_control`): each format's tool lists, and its turns and system prompts where they are lists of
 * messages, items or blocks. Not the objects a client names itself (a function's parameter schema, a tool call's
 * arguments). With them, where any format's items carry content parts (its `images` declaration), each list with
 * its parts' fields.
 */
const vendorNamedListsOf = derivedFrom((formats: Record<string, Protocol>) => {
  const all = Object.values(formats);
  const lists = new Set(
    all.flatMap((f) => [...(f.tools ? [f.tools.list] : []), ...(f.prompt?.turns ?? []), ...(f.prompt?.system_prompt ?? [])]),
  );
  const byList = new Map<string, { fields: Set<string>; nested: Set<string> }>();
  for (const f of everyDeclared(Object.values(formats))) {
    for (const list of f.lists) {
      const at = byList.get(list) ?? { fields: new Set<string>(), nested: new Set<string>() };
      for (const field of f.item_parts) at.fields.add(field);
      if (f.nested) at.nested.add(f.nested);
      byList.set(list, at);
    }
  }
  return { lists: [...lists], parts: byList };
});

/**
 * Refuses a field name that is not lowercase: the body's, each entry's of the vendor-named lists, and each content
 * part's (and the parts nested in it) wherever any format declares content parts, since a vendor reads them all.
 */
export function checkFieldSpelling(body: JsonObject, formats: Record<string, Protocol>): void {
  checkNames(body, '');
  const { lists, parts } = vendorNamedListsOf(formats);
  for (const list of lists) {
    const items = body[list];
    if (!Array.isArray(items)) continue;
    const declared = parts.get(list);
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (!isObject(item)) continue;
      checkNames(item, `${list}[${i}].`);
      for (const field of declared?.fields ?? []) checkParts(item[field], `${list}[${i}].${field}`, declared!.nested, 1);
    }
  }
}

function checkParts(parts: JsonValue | undefined, at: string, nested: ReadonlySet<string>, depth: number): void {
  if (!Array.isArray(parts) || depth > MAX_PART_DEPTH) return;
  for (let j = 0; j < parts.length; j++) {
    const part = parts[j];
    if (!isObject(part)) continue;
    checkNames(part, `${at}[${j}].`);
    for (const field of nested) checkParts(part[field], `${at}[${j}].${field}`, nested, depth + 1);
  }
}

/** Refuses a name of `part`, found at the path `at`, that is not lowercase. */
function checkNames(part: JsonObject, at: string): void {
  for (const key in part) {
    if (PLAIN_NAME.test(key)) continue; // folds to itself: no need to normalise every call's names
    const plain = key.normalize('NFKC').toLowerCase();
    if (plain === key) continue;
    const shown = (k: string) => `${at}${k.slice(0, 60)}`;
    throw errors.invalidRequest(`Field names are lowercase: send '${shown(plain)}', not '${shown(key)}'.`, shown(key));
  }
}
