// Shared shapes at module boundaries. Everything here is plain data: the catalog and config
// YAML load into these, and a door's chain passes one `Call` through named transforms.

import type { CatalogModel } from './schema-types.ts';

// The catalog's shapes come from catalog/schema.json (engine/core/schema-types.ts).
// A vendor id is a key of config/vendors.yaml, the one list of vendors (the loader checks every other name).
export type { ModelKind, Pricing, VendorId } from './schema-types.ts';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const isJsonObject = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A catalog model once loaded: its id, every field the YAML may omit filled in, and where it was read. */
export type ModelEntry = Required<Omit<CatalogModel, 'effort_levels'>> & {
  id: string;
  /** Accepted reasoning_effort values, compared with whatever string a client sends. */
  effort_levels: string[] | null;
  /** Where the entry was read, for error messages. */
  file: string;
  line: number;
};

/** Normalised usage: four token buckets plus billed server-side tool calls. */
export interface Usage {
  /** Input tokens read at the full input price (cache reads and writes excluded). */
  input_tokens: number;
  output_tokens: number;
  /** The part of output_tokens the vendor reports as reasoning (already priced as output), when it says. */
  reasoning_tokens?: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /** The part of cache_write_tokens written to be kept an hour (`ttl: 1h`), billed at its own price. */
  cache_write_1h_tokens?: number;
  web_search_calls: number;
  file_search_calls: number;
  /** Tokens of another model (advisor tool) billed at that model's own price. */
  advisor?: { model: string; input_tokens: number; output_tokens: number }[];
  /** Units for non-token kinds. */
  images?: number;
  characters?: number;
  video_seconds?: number;
  /** When the vendor states its charge in USD (vendor D images and videos). */
  vendor_cost_usd?: number;
}

export const emptyUsage = (): Usage => ({
  input_tokens: 0,
  output_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  web_search_calls: 0,
  file_search_calls: 0,
});
