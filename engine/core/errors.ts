// Errors are values: a code, a status and a message. They are created here and rendered in the body a door's clients
// read (ErrorBody): the gateway's own, below, or one a wire format declares in its folder (transforms/protocols/).
import type { RefusalStatus } from './schema-types.ts';

/** Every error type the client contract names (README "Errors"): a vendor's other types are mapped to these. */
const ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'insufficient_credit',
  'model_not_in_plan',
  'model_not_found',
  'not_found_error',
  'conflict_error',
  'request_too_large',
  'key_limit_exceeded',
  'upstream_error',
  'api_error',
] as const;

export type ErrorType = (typeof ERROR_TYPES)[number];

const isErrorType = (s: string): s is ErrorType => (ERROR_TYPES as readonly string[]).includes(s);

export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly param?: string | undefined;
  /** Extra fields carried in the error object (for example `suggestion`). */
  readonly extra: Record<string, unknown>;
  /** Headers to send with the error (for example Retry-After). */
  readonly headers: Record<string, string>;
  /** A 5xx the gateway chose and expects (it is stopping): logged at warn, not as a failure. */
  readonly expected: boolean;

  constructor(
    status: number,
    type: ErrorType,
    message: string,
    opts: {
      param?: string | undefined;
      extra?: Record<string, unknown> | undefined;
      headers?: Record<string, string>;
      expected?: boolean;
    } = {},
  ) {
    super(message);
    this.name = 'GatewayError';
    this.status = status;
    this.type = type;
    this.param = opts.param;
    this.extra = opts.extra ?? {};
    this.headers = opts.headers ?? {};
    this.expected = opts.expected ?? false;
  }
}

export const isGatewayError = (e: unknown): e is GatewayError => e instanceof GatewayError;

/**
 * The error type a status means when nothing more specific is known: a refusal written in YAML states only
 * its status, and its type must follow (a 403 is a permission_error, never an invalid_request_error).
 */
const TYPE_OF_STATUS = {
  400: 'invalid_request_error',
  403: 'permission_error',
} as const satisfies Record<RefusalStatus, ErrorType>; // the schema's statuses: tsc fails here when they part

/** What a vendor's status means when its body names no type the contract knows or its protocol maps. */
const TYPE_OF_VENDOR_STATUS: Readonly<Record<number, ErrorType>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  413: 'request_too_large',
};

/**
 * The contract's type for a vendor's error: its own type when the contract knows it, else what its protocol maps
 * it to (transforms/protocols), else what its status means. Never the vendor's unknown word, which a client's
 * SDK could not match.
 */
export function vendorErrorType(type: string | undefined, mapped: Readonly<Record<string, ErrorType>>, status: number): ErrorType {
  if (type !== undefined && isErrorType(type)) return type;
  if (type !== undefined && Object.hasOwn(mapped, type)) return mapped[type] as ErrorType;
  return TYPE_OF_VENDOR_STATUS[status] ?? (status >= 500 ? 'upstream_error' : 'invalid_request_error');
}

/** A refusal lifted within this long says when (`retry-after`); one lifted later says not to retry. */
const SOON_MS = 60_000;

/**
 * The retry headers of a refusal that waiting lifts in `liftsInMs` (null: never, a top-up or an owner must act).
 * The official SDKs retry a 429 by default and honour both headers: a refusal retrying cannot lift must say so,
 * or the client waits through retries that can only fail.
 */
function retryHeaders(liftsInMs: number | null): Record<string, string> {
  if (liftsInMs !== null && liftsInMs <= SOON_MS) return { 'retry-after': String(Math.max(1, Math.ceil(liftsInMs / 1000))) };
  return { 'x-should-retry': 'false' };
}

// One constructor per row of the public error table (README "Errors"), so every door says the same thing the same way.
export const errors = {
  invalidRequest: (message: string, param?: string) => new GatewayError(400, TYPE_OF_STATUS[400], message, { param }),
  wrongDoor: (message: string) => new GatewayError(400, TYPE_OF_STATUS[400], message, { param: 'model' }),
  authentication: (message: string) => new GatewayError(401, 'authentication_error', message),
  forbidden: (message: string) => new GatewayError(403, TYPE_OF_STATUS[403], message),
  /** A refusal from YAML (door, model rule or caller): its type follows from its status. */
  refused: (status: RefusalStatus, message: string, param?: string) => new GatewayError(status, TYPE_OF_STATUS[status], message, { param }),
  /** `liftsInMs`: when waiting lifts the refusal (the wallet's own calls in flight finishing); null: only a top-up does. */
  insufficientCredit: (message: string, liftsInMs: number | null = null) =>
    new GatewayError(402, 'insufficient_credit', message, { headers: retryHeaders(liftsInMs) }),
  modelNotInPlan: (message: string, suggestion?: string) =>
    new GatewayError(403, 'model_not_in_plan', message, { param: 'model', extra: suggestion ? { suggestion } : {} }),
  /** The key's own list of models (set by its owner) does not name this one: 403 before anything is held. */
  /** `at`: the field naming the model (`model`, or another a wire format declares, such as `tools[0].model`). */
  modelNotOnKeyList: (model: string, list: readonly string[], at = 'model') =>
    new GatewayError(
      403,
      'permission_error',
      `This key may call only these models: ${list.join(', ')}. '${model}'${at === 'model' ? '' : ` (${at})`} is not one of them; the wallet's owner can change the key's models.`,
      { param: at, extra: { allowed_models: [...list] } },
    ),
  modelNotFound: (message: string, suggestion?: string, at = 'model') =>
    new GatewayError(404, 'model_not_found', message, { param: at, extra: suggestion ? { suggestion } : {} }),
  notFound: (message: string) => new GatewayError(404, 'not_found_error', message),
  /** A key id the key doors do not find: the contract's table gives it the type of an unknown model. */
  keyNotFound: (message: string) => new GatewayError(404, 'model_not_found', message),
  /** A body naming a stored response, item or conversation the caller's wallet did not make: `at` is the field. */
  storedNotFound: (message: string, at: string) => new GatewayError(404, 'not_found_error', message, { param: at }),
  conflict: (message: string, extra?: Record<string, unknown>) => new GatewayError(409, 'conflict_error', message, { extra }),
  tooLarge: (message: string) => new GatewayError(413, 'request_too_large', message),
  headersTooLarge: () => new GatewayError(431, 'request_too_large', 'The request headers are too large.'),
  requestTimeout: () => new GatewayError(408, 'invalid_request_error', 'The request was not received in time.'),
  /** `liftsInMs`: when waiting lifts the limit (its reset, or calls in flight finishing). */
  keyLimit: (message: string, liftsInMs: number | null) =>
    new GatewayError(429, 'key_limit_exceeded', message, { headers: retryHeaders(liftsInMs) }),
  /** `retryAfterMs`: how long the vendor asked to be left alone, past what the gateway waits for itself. */
  upstream: (message: string, retryAfterMs?: number) =>
    new GatewayError(
      502,
      'upstream_error',
      message,
      retryAfterMs === undefined ? {} : { headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) } },
    ),
  /** The vendor refused the gateway's own credential: the client's key was fine, and only the operator can act. */
  vendorCredentialRefused: (vendor: string, status: number) =>
    new GatewayError(
      502,
      'upstream_error',
      `Vendor ${vendor.toUpperCase()} refused the gateway's credential for it (HTTP ${status}); your API key was accepted and nothing was charged. ` +
        `The gateway's operator must fix the vendor credential; retrying will not help until then.`,
    ),
  unavailable: (message: string) => new GatewayError(503, 'api_error', message),
  /** The gateway is stopping: a 503 a deploy makes for every call that arrives meanwhile, not a failure. */
  stopping: (message: string) => new GatewayError(503, 'api_error', message, { expected: true }),
  /** Text PostgreSQL will not store (a NUL byte): the client's input, so a 400 and not a fault of ours. */
  unstorableText: () =>
    new GatewayError(
      400,
      TYPE_OF_STATUS[400],
      'The request carries text that cannot be stored (a NUL byte or an invalid character). Remove it and retry.',
    ),
};

interface RenderedError {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * An error body as one family of clients reads it: written from a GatewayError, and described by a JSON Schema
 * under `name` in the OpenAPI document. A door answers in its format's (config/doors.yaml `errors`); the `type`
 * values are the contract's in every body.
 */
export interface ErrorBody {
  name: string;
  write(err: GatewayError): Record<string, unknown>;
  /** The SSE event name its clients read a failure mid-stream under; absent: the body alone, as a data frame. */
  streamEvent?: string;
  schema: Record<string, unknown>;
}

/** The JSON Schema of a body `{error: {…}}` whose error object has `properties`, `required` of them always. */
export function errorFieldSchema(properties: Record<string, unknown>, required: string[]): Record<string, unknown> {
  return { type: 'object', required: ['error'], properties: { error: { type: 'object', required, properties } } };
}

/** The gateway's own body, `{error: {type, message, code, param}}`: its routes that serve no door, and the formats that read it. */
export const gatewayErrorBody: ErrorBody = {
  name: 'ChatError',
  write: (err) => ({ error: { type: err.type, message: err.message, code: err.type, param: err.param ?? null, ...err.extra } }),
  schema: errorFieldSchema(
    { type: { type: 'string' }, message: { type: 'string' }, code: { type: 'string' }, param: { type: ['string', 'null'] } },
    ['type', 'message'],
  ),
};

/** The error as `body` writes it, with its status and headers. */
export const renderError = (err: GatewayError, body: ErrorBody = gatewayErrorBody): RenderedError => ({
  status: err.status,
  headers: err.headers,
  body: body.write(err),
});

// SQLSTATEs for text the database cannot represent: character_not_in_repertoire (a NUL byte or invalid
// UTF-8) and untranslatable_character. Only a client's text reaches a query in that state.
const UNSTORABLE_TEXT = new Set(['22021', '22P05']);

/** Any surrogate, paired or not: most text has none and skips the costlier look-around test. */
const ANY_SURROGATE = /[\uD800-\uDFFF]/;
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Text with an unpaired UTF-16 surrogate (JSON can carry `\ud800` alone): not Unicode, so it would be stored as
 * U+FFFD, a different name than the one sent. Fields that are stored refuse it by name.
 */
export const hasUnpairedSurrogate = (s: string): boolean => ANY_SURROGATE.test(s) && UNPAIRED_SURROGATE.test(s);

/** A database error saying a piece of text could not be stored: the client's input, not our fault. */
const isUnstorableText = (e: unknown): boolean => {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNSTORABLE_TEXT.has(code);
};

/**
 * Anything thrown that is not a GatewayError is our fault, 503 api_error and never a stack to the client,
 * except text the database refused, which is the client's and a 400.
 */
export function toGatewayError(e: unknown): GatewayError {
  if (isGatewayError(e)) return e;
  if (isUnstorableText(e)) return errors.unstorableText();
  if (endedLockWait(e))
    return errors.unavailable("The wallet's balance is locked by another operation right now. Nothing was charged; retry shortly.");
  return errors.unavailable('Temporary fault on the service side. Retry later.');
}

const codeOf = (e: unknown): unknown => (e as { code?: unknown } | null)?.code;

/**
 * lock_not_available: the ledger gave up waiting for a lock another session held, and rolled back. Also when it came
 * wrapped: the ledger's look at what was locked (money/retry.ts TablesLocked) can find the rows let go in between.
 */
const endedLockWait = (e: unknown): boolean => codeOf(e) === '55P03' || codeOf((e as { cause?: unknown } | null)?.cause) === '55P03';
