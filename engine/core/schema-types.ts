// Generated from config/schemas/billing.schema.json, config/schemas/callers.schema.json, config/schemas/doors.schema.json, config/schemas/limits.schema.json, config/schemas/rules.schema.json, config/schemas/vendors.schema.json, config/schemas/videos.schema.json, catalog/schema.json.
// Do not edit: change the schema, then run `npm run schema-types`.
export type BillingFile = {
  /**
   * The currency the dashboard, the operator tools, the CSV downloads and the webhook payloads show
   * money in first, in whole units, with the dollars and credits beside; amounts may be typed in it too.
   * A display and input conversion only: the ledger stays nano-USD. Absent: dollars and credits only.
   */
  display_currency?: {
    /** ISO 4217 code of the currency (KRW: South Korean won, written ₩ or 원). */
    code: 'KRW';
    /**
     * Units of the currency one US dollar is shown as (1400: $1 = ₩1,400). A rate the operator keeps
     * current by hand and reloads; it changes no amount in the ledger.
     */
    per_usd: number;
  };
  /** How the ledger writes money moves on PostgreSQL, and how often it audits itself. */
  ledger?: {
    /**
     * How many queues the wallets' reserves and settles share in each process (default 1): each queue runs
     * one transaction at a time, holding whatever its wallets' calls queued meanwhile. More queues: more
     * transactions at once, each holding fewer calls.
     */
    queues?: number;
    /**
     * How long the end of an answer (a body, a stream's end marker) waits for its charge to be committed
     * (default 3000). Past it the answer goes out and the charge stays queued in the charge writer,
     * counted as at risk in /metrics.
     */
    commit_wait_ms?: number;
    /**
     * Whether the ledger's money moves (reserves, charges, releases) wait for PostgreSQL to flush their
     * commit to disk (default on). off: the answer's end waits for the commit but not the disk flush; a
     * crash of the database server (not of the gateway) can lose the charges of its last few hundred
     * milliseconds (3 × wal_writer_delay). Read at each batch. The embedded database is not affected.
     */
    synchronous_commit?: 'on' | 'off';
    /**
     * Each process audits the ledger this often (default 300000; 0: never): the journal against the
     * balance columns, wallets against their lots, nothing below zero, no hold left long past its expiry.
     * Read at start.
     */
    audit_interval_ms?: number;
  };
  /**
   * Budget leases: each process holds a slice of a wallet's balance per vendor and admits calls against
   * it in memory; each call's charge is written by the charge writer before its answer ends. Off: every
   * call holds its own reservation (a hold of one call).
   */
  leases?: {
    enabled: boolean;
    /** A slice covers this many seconds of the wallet's recent spend on the vendor. */
    slice_seconds: number;
    min_slice_credits: number;
    /** The most of what a wallet can spend on a vendor that one lease takes. */
    max_share: number;
    /** A lease not renewed for this long (its process died) is released by the sweeper. */
    ttl_ms: number;
    idle_return_ms: number;
    /**
     * At most this many charges decided and not yet written, per process (default 1024). Past it, calls
     * hold their own reservation until the writes catch up.
     */
    max_pending_draws?: number;
    /**
     * Charges wait up to this long after the last write of charges started, so that more of them share a
     * transaction (default 0: a write starts at once when none runs, and the next takes every charge that
     * queued meanwhile). Every millisecond here is added to the end of every answer.
     */
    flush_ms?: number;
  };
  server_tools: Record<string, number>;
  /**
   * The hold of an image model priced per image (image_charge) is this factor times its price
   * (image_reservation).
   */
  image_reservation_factor: number;
  /** How the most a text call can cost is bounded: what the hold covers before the vendor call. */
  reservation: {
    /** Most answers one call may ask for; more is a 400. */
    max_choices: number;
    /**
     * Calls held per server tool whose calls the body does not cap; written into such a body as its cap
     * (vendor A refuses a max_uses of 0).
     */
    max_server_tool_calls: number;
    /** Input tokens held per image block. */
    image_input_tokens: number;
    /**
     * Input tokens held per web search for the result pages the vendor feeds back into the prompt (the
     * body cannot show them).
     */
    search_result_tokens: number;
    /**
     * Input tokens held per chunk a file search feeds back (the largest chunk a vector store may be cut
     * into).
     */
    file_search_chunk_tokens: number;
    /** Chunks per file search call written into a file search tool that does not cap them, and held. */
    file_search_results: number;
    /**
     * By vendor: the most tool calls the vendor's server-side loop runs in one call where no body field
     * caps them (remote MCP servers and tool search on /v1/messages), after which it pauses the turn. Each
     * is held as a pass; a vendor absent here is held for max_server_tool_calls.
     */
    uncapped_loop_calls?: Record<string, number>;
    /**
     * By vendor: tokens the vendor adds once per call around the text. Every vendor of config/vendors.yaml
     * has an entry (checked at load).
     */
    framing_per_call: Record<string, number>;
    /**
     * By vendor: tokens the vendor adds per message; system or instructions count as one. Every vendor of
     * config/vendors.yaml has an entry (checked at load).
     */
    framing_per_message: Record<string, number>;
    /** Once when the body gives tools: the vendor's tool-use system prompt. */
    tool_prompt_tokens: number;
    /** Per vendor-defined tool (a type other than function or custom): its definition. */
    vendor_tool_tokens: number;
    /**
     * By vendor: the output limit field the chains (cap-output) write at the model's max_output when the
     * body sends none, and lower to it when the body sends more: for vendors whose servers default to, or
     * allow, more output than the catalog's max_output.
     */
    output_cap_written?: Record<string, string>;
    /** Vendors that write the prompt cache only where the body marks cache_control. */
    cache_writes_when_marked: VendorId[];
    /**
     * Output tokens held for one generated image of a token-priced image model, by the quality asked;
     * `default` when the body names none or one not listed.
     */
    image_output_tokens: Record<string, number>;
  };
  /** Vendors whose models need credits usable for them; otherwise 403 model_not_in_plan. */
  plan_restricted_vendors: VendorId[];
  /**
   * What a door's chain must hold for its calls to be settled; checked against config/doors.yaml at
   * load.
   */
  settlement: {
    /** By the door's billing kind. */
    billing: {
      tokens?: ChainNeeds;
      image?: ChainNeeds;
      video?: ChainNeeds;
      characters?: ChainNeeds;
      free?: ChainNeeds;
    };
  };
};

/**
 * A vendor id: a key of config/vendors.yaml (checked by the loader against that file, the one list of
 * vendors). Lowercase letters and digits, so GATEWAY_VENDOR_<ID>_URLS can name it.
 */
export type VendorId = string;

export type ChainNeeds = {
  /** Request steps every such protocol must run. */
  request?: string[];
  /** Every such protocol must name a usage reader. */
  usage_reader?: boolean;
};

/**
 * Refusals that depend on who calls, checked on every door (or the doors listed) after the door's and
 * the model's refusals.
 */
export type CallersFile = {
  refuse: CallerRefusalYaml[];
};

export type CallerRefusalYaml = {
  /** Door names of config/doors.yaml the refusal is checked on; every door when omitted. */
  doors?: string[];
  when: Condition;
  say: string;
  status: RefusalStatus;
};

export type Condition = {
  param: string;
  present: boolean;
} | {
  param: string;
  equals: ScalarValue;
} | {
  param: string;
  not_equals: ScalarValue;
} | {
  param: string;
  in: ScalarValue[];
} | {
  param: string;
  not_in: ScalarValue[];
} | {
  header: string;
  matches: string;
} | {
  /**
   * Matches a tool whose `type` is (not) in the list; entries ending in * are prefixes; `ignore_case`
   * compares without regard to case. Tools without a type are user-defined and never match.
   */
  tool_type: {
    in: string[];
    ignore_case?: boolean;
  } | {
    not_in: string[];
    ignore_case?: boolean;
  };
} | {
  /** Holds when the calling key has this audience (a key of a wallet that splits usage). */
  caller: {
    audience: 'student' | 'teacher';
  };
} | {
  all: Condition[];
} | {
  any: Condition[];
};

export type ScalarValue = string | number | boolean | null;

/** Default 400 (invalid_request_error); 403 answers permission_error. */
export type RefusalStatus = 400 | 403;

/**
 * Doors that carry a model: what they serve and refuse, and the wire format each vendor speaks on
 * them.
 */
export type DoorsFile = Record<string, DoorYaml>;

export type DoorYaml = {
  path: string;
  /** Default json. */
  body?: 'json' | 'multipart' | 'json-or-multipart';
  /** Multipart doors: the form names that are files; every other part must be a plain value. */
  files?: string[];
  serves: {
    kinds: ModelKind[];
    vendors: VendorId[];
  };
  /**
   * The wire format whose error body the door's clients read (a key of transforms/protocols/index.ts
   * whose errors declare a body).
   */
  errors: string;
  key_headers: ('bearer' | 'x-api-key')[];
  requires: string[];
  requires_headers?: {
    name: string;
    pattern: string;
    say: string;
  }[];
  refuse?: RefusalYaml[];
  /**
   * Values the door changes before any vendor sees the body: a parameter sent as `from` is sent as `to`,
   * for the vendors listed (every vendor when omitted). The answer names each change in
   * x-service-adjusted.
   */
  rewrite?: {
    /** A top-level body field. */
    param: string;
    from: ScalarValue;
    to: ScalarValue;
    /**
     * Also send `to` when the body leaves the parameter out, where the vendor's own default would differ
     * from what the call is held and charged for. Not named in x-service-adjusted: the client asked for
     * nothing else.
     */
    or_omitted?: boolean;
    vendors?: VendorId[];
    why: string;
  }[];
  /** Default tokens. */
  billing?: BillingKind;
  answer_body?: 'json' | 'binary';
  default_model?: string;
  /**
   * The wire format each vendor speaks on this door (a key of transforms/protocols/index.ts), '*' for
   * the rest. The format's folder declares the chain this door runs to reach it.
   */
  vendor_protocol: Record<string, string>;
};

export type ModelKind = 'text' | 'image' | 'video' | 'speech' | 'embedding' | 'moderation';

export type RefusalYaml = {
  when: Condition;
  say: string;
  status?: RefusalStatus;
  vendors?: VendorId[];
};

/**
 * How a door's calls are reserved and charged; what each kind needs in a chain is config/billing.yaml
 * `settlement`.
 */
export type BillingKind = 'tokens' | 'image' | 'video' | 'characters' | 'free';

export type LimitsFile = {
  /**
   * Longest a client may take to send a whole request, headers and body (default 120000); a body
   * trickled in slower is cut off with 408.
   */
  request_timeout_ms?: number;
  /** Longest a client may take to send a request's headers (default 10000). */
  headers_timeout_ms?: number;
  call_timeout_ms: Record<string, number>;
  connect_timeout_ms: number;
  /** Most connections open at once to one vendor origin; a call past it waits for one. */
  vendor_connections: number;
  /**
   * Most calls at once on one HTTP/2 connection to a vendor whose vendors.yaml entry says http2: true
   * (default 100; the vendor's own limit applies when lower); past it a call takes another connection.
   */
  vendor_http2_streams?: number;
  body_limit_bytes: number;
  json_max_depth: number;
  /**
   * How long a streaming client may leave the gateway's write buffer full before it is treated as gone:
   * the vendor's stream is then read to its end and settled from its usage, and nothing more is buffered
   * for that client.
   */
  stream_stall_ms: number;
  /**
   * How long the events a vendor's stream opens with (before any content) are kept from the client: an
   * error in that time still moves the call to the next route, as if the stream had never opened. Past
   * it they are sent, so a client waiting on a model that thinks before it writes sees its answer begin;
   * 0 sends them at once.
   */
  stream_opening_hold_ms: number;
  file_limit_bytes: number;
  default_max_tokens: number;
  effort_carried_since: string;
  reservation_ttl_ms: number;
  sweep_interval_ms: number;
  retry_after_max_ms: number;
  video_deadline_ms: number;
  video_retention_days: number;
  /** How long per-call usage records are kept (GET /v1/generations/{id}, the dashboard). */
  usage_record_days: number;
  /**
   * How long the wallets' audit trail is kept; never shorter than usage_record_days (a smaller value
   * keeps it as long). Absent: as long as the usage records.
   */
  audit_record_days?: number;
};

export type RulesFile = Record<string, RuleYaml>;

export type RuleYaml = {
  doors?: string[];
  drops?: string[];
  lowers_forced_tool_choice?: boolean;
  refuses?: RefusalYaml[];
  vendor_refuses?: RefusalYaml[];
  why: string;
};

/**
 * The vendors, by id: the one list of them. Every vendor named elsewhere in config/ and catalog/ is a
 * key here (checked at load); GATEWAY_VENDOR_<ID>_URLS and _KEY give its routes.
 */
export type VendorsFile = Record<string, VendorYaml>;

export type VendorYaml = {
  name: string;
  credential: {
    header: string;
    scheme?: string;
  };
  headers?: Record<string, string>;
  forward_headers?: string[];
  /**
   * Offer HTTP/2 on https routes (ALPN). When the vendor picks it, calls share a connection, up to
   * limits.yaml vendor_http2_streams or the vendor's own limit; a vendor that picks HTTP/1.1, and every
   * http:// route, gets one call per connection. Default false.
   */
  http2?: boolean;
  /**
   * The vendor's tokenizer never puts two whitespace-separated words in one token (true of o200k_base,
   * cl100k_base and SentencePiece split at whitespace), so a prompt's words are a lower bound on its
   * input tokens: a prompt with more words than the model's context window is refused with 400 before
   * anything is held. Leave it out while the vendor's tokenizer is not known: the vendor's own refusal
   * then stands (the bundled simulator refuses input past the context window as the vendor does).
   * Default false.
   */
  tokens_at_least_words?: boolean;
};

export type VideosFile = {
  prompt_max_chars: number;
  seconds: {
    min: number;
    max: number;
    default: number;
  };
  resolutions: string[];
  aspect_ratios: string[];
  defaults: {
    resolution: string;
    aspect_ratio: string;
  };
  sizes: Record<string, {
    resolution: string;
    aspect_ratio: string;
  }>;
  deliver_attempts: number;
};

/**
 * One file of catalog/ (vendor-a.yaml ... vendor-e.yaml, media.yaml). Lists models, who serves them,
 * what they cost and which named rules (config/rules.yaml) apply. Unknown fields are refused
 * everywhere so a typo such as `inptu:` stops the start. Cross-file checks (rule names exist,
 * successors exist, ids unique, cache_read below input, doors exist in config/doors.yaml and serve the
 * kind and vendor) are made by engine/catalog/validate.ts.
 */
export type CatalogFile = {
  /**
   * Vendor of every model in this file, unless a model names its own `vendor:`. Omit in files that mix
   * vendors (media.yaml).
   */
  vendor?: VendorId;
  /** Models by id. Ids use lowercase letters, digits, dots and hyphens. */
  models: Record<string, CatalogModel>;
};

/** One model. */
export type CatalogModel = {
  /** Overrides the file's vendor (required when the file has none; checked by the loader). */
  vendor?: VendorId;
  kind: ModelKind;
  /** Restrict the model to these doors. Omitted: every door serving this kind and vendor. */
  doors?: string[];
  /** Context window in tokens (text models, 16K to 1050K), or null for non-text kinds. */
  context_window?: number | null;
  /**
   * Largest output in tokens one call can produce: the upper bound of the reservation. Required for text
   * models.
   */
  max_output?: number | null;
  pricing: Pricing;
  /**
   * Accepted reasoning_effort values, or null when the model does not accept reasoning_effort
   * (supports_effort false).
   */
  effort_levels?: null | EffortLevel[];
  /** Names of entries of config/rules.yaml (the loader checks they exist). [] when none. */
  rules?: string[];
  /** Korean date from which the model is no longer sold, or null. Requires a successor. */
  sale_ends?: null | string;
  /** Id of the model that replaces this one (must exist in the catalog), or null. */
  successor?: null | string;
  /**
   * true once sale_ends has come and the operator has seen it: the entry stays so callers of this id are
   * pointed at the successor, and the start and `catalog check --strict` no longer warn of the date.
   * Requires sale_ends.
   */
  retired?: boolean;
  data_handling?: null | DataHandling;
  /**
   * spec: the figures are stated by the published interface (fields listed in `assumed` excepted);
   * assumed: every figure was chosen by us.
   */
  source: 'spec' | 'assumed';
  /** With source spec: the fields whose figures the spec does not state. */
  assumed?: AssumedField[];
};

/** Prices in USD. Token prices are per 1M tokens. */
export type Pricing = {
  /** USD per 1M input tokens (uncached). */
  input?: number;
  /** USD per 1M output tokens. */
  output?: number;
  /** USD per 1M input tokens read from the prompt cache; must be below `input` (checked by the loader). */
  cache_read?: number;
  /** USD per 1M input tokens written to the prompt cache (kept the default time, 5 minutes). */
  cache_write?: number;
  /**
   * USD per 1M input tokens written to the prompt cache to be kept 1 hour (`ttl: 1h`); absent:
   * cache_write.
   */
  cache_write_1h?: number;
  /** Higher prices once the call's input passes a threshold; the whole call is then priced at the tier. */
  tiers?: PriceTier[];
  /** Announced price changes: from the given Korean date on, these prices replace input/output. */
  scheduled?: ScheduledPrice[];
  /** Image models: USD held per image before the call. */
  image_reservation?: number;
  /** Vendor D image models: USD the vendor charges per image (debited exactly). */
  image_charge?: number;
  /**
   * Video models: USD per second of output, by resolution (one of config/videos.yaml `resolutions`,
   * checked by the loader). A resolution not listed is one the model does not produce.
   */
  video_per_second?: Record<string, number>;
  /** Speech models: USD per 1M input characters. */
  per_mchar?: number;
};

export type PriceTier = {
  /** Input token count past which the tier applies. */
  above_input_tokens: number;
  /** USD per 1M input tokens in this tier. */
  input: number;
  /** USD per 1M output tokens in this tier. */
  output: number;
};

export type ScheduledPrice = {
  from: string;
  /** USD per 1M input tokens from that date. */
  input: number;
  /** USD per 1M output tokens from that date. */
  output: number;
};

export type EffortLevel = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/** Where the vendor serves the request and what it keeps. */
export type DataHandling = {
  /** Country where requests are handled, e.g. United States. */
  region: string;
  deletes_request_after_answer: boolean;
  /** How long the vendor's automatic cache keeps data, or `undisclosed`. */
  cache_retention: string;
};

/**
 * A field whose figure the spec does not state: a model field, a pricing field, or tiers.input /
 * tiers.output when only a tier's threshold is the spec's.
 */
export type AssumedField = 'context_window' | 'max_output' | 'effort_levels' | 'sale_ends' | 'successor' | 'data_handling' | 'doors' | 'input' | 'output' | 'cache_read' | 'cache_write' | 'tiers' | 'tiers.above_input_tokens' | 'tiers.input' | 'tiers.output' | 'scheduled' | 'image_reservation' | 'image_charge' | 'video_per_second' | 'per_mchar';
