// A key's list of models it may call: model ids, or patterns ending in `*` (`b-*` is every id beginning
// with `b-`). The key doors check the spelling when the list is set; the model doors and GET /v1/models ask
// `listAllows` for each model. No list (null or empty) leaves every model to the wallet's credits.

/** A model id, or a prefix followed by one `*` at the end; letters, digits and `.`, `_`, `:`, `/`, `-`. */
const ENTRY = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}\*?$|^\*$/;

export const MAX_KEY_MODELS = 100;

export const isModelEntry = (s: string): boolean => ENTRY.test(s);

export function listAllows(list: readonly string[] | null | undefined, modelId: string): boolean {
  if (!list || list.length === 0) return true;
  return list.some((entry) => (entry.endsWith('*') ? modelId.startsWith(entry.slice(0, -1)) : modelId === entry));
}
