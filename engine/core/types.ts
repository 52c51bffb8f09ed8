// Shared shapes at module boundaries. Everything here is plain data: the catalog and config
// YAML load into these, and the pipeline passes one `Call` through named transforms.

export type VendorId = 'a' | 'b' | 'c' | 'd' | 'e';
export const VENDORS: readonly VendorId[] = ['a', 'b', 'c', 'd', 'e'];

export type ModelKind = 'text' | 'image' | 'video' | 'speech' | 'embedding' | 'moderation';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Prices are USD as the catalog states them; the ledger converts to integer nano-USD. */
export interface PriceTier {
  above_input_tokens: number;
  input: number;
  output: number;
}

export interface ScheduledPrice {
  /** Korean calendar date (YYYY-MM-DD) from which the price applies, 00:00 KST. */
  from: string;
  input: number;
  output: number;
}

export interface Pricing {
  /** USD per 1M input tokens. */
  input?: number;
  /** USD per 1M output tokens. */
  output?: number;
  cache_read?: number;
  cache_write?: number;
  tiers?: PriceTier[];
  scheduled?: ScheduledPrice[];
  /** USD held per image before the call. */
  image_reservation?: number;
  /** USD the vendor charges per image (vendor D). */
  image_charge?: number;
  /** USD per second of video, by resolution (480p, 720p, 1080p). */
  video_per_second?: Record<string, number>;
  /** USD per 1M characters (speech). */
  per_mchar?: number;
}

export interface DataHandling {
  region: string;
  deletes_request_after_answer: boolean;
  cache_retention: string;
}

export interface ModelEntry {
  id: string;
  vendor: VendorId;
  kind: ModelKind;
  /** Doors that serve this model; when the YAML omits it, every door serving the kind and vendor. */
  doors: string[];
  context_window: number | null;
  /** Largest output the model can produce in one call: the reservation's upper bound. */
  max_output: number | null;
  pricing: Pricing;
  effort_levels: string[] | null;
  /** Names of entries of config/rules.yaml. */
  rules: string[];
  sale_ends: string | null;
  successor: string | null;
  data_handling: DataHandling | null;
  source: 'spec' | 'assumed';
  /** Fields whose figures the spec does not state, when source is `spec`. */
  assumed: string[];
  /** Where the entry was read, for error messages. */
  file: string;
  line: number;
}

/** Normalised usage: four token buckets plus billed server-side tool calls. */
export interface Usage {
  /** Input tokens read at the full input price (cache reads and writes excluded). */
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
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
