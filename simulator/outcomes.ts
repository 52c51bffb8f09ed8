// What the simulator delivered for each request, so a test can tell what the vendor would bill for it: a
// ledger auditor compares these records with what the gateway charged. A record is finished when the
// response (or its socket) closes, whatever happened: a complete answer, a stream cut half-way, an error
// status, a reset, a client that went away.
import type { ServerResponse } from 'node:http';

/** Token buckets in the gateway's normalised form (see common.ts): `input` is the uncached input. */
export interface UsageBuckets {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
  reasoning: number;
}

/**
 * - `complete`: a whole, well-formed answer was handed to the socket (a stream to its last event).
 * - `partial`: a stream that began and was cut: a reset, an error event, a stall, or the reader went away.
 * - `garbled`: a 200 whose body is not the JSON it claims to be: unusable, the vendor's usage unknowable.
 * - `none`: no answer at all (an error status, a reset or stall before the first event).
 */
export type Delivery = 'complete' | 'partial' | 'garbled' | 'none';

export interface Outcome {
  /** Order of arrival, shared with `received`. */
  seq: number;
  route: string;
  path: string;
  model: string | null;
  /** The id of a `[[sim:call=ID]]` tag anywhere in the request body, so a test can match its own calls. */
  callTag: string | null;
  streaming: boolean;
  /** The fault that applied, by kind; null when none did. */
  fault: string | null;
  /** The status sent, null when no head was sent (reset, stall without headers). */
  status: number | null;
  delivered: Delivery;
  /** The vendor refused the request: an error status, or nothing came back at all. */
  refused: boolean;
  /** Events written to a stream before it ended or was cut. */
  events: number;
  /**
   * What the vendor bills for this request when it delivered a complete answer: the usage it reported, or
   * (usage-missing) the usage it really produced but did not report; null when it delivered none.
   */
  usage: UsageBuckets | null;
  /** The usage reached the gateway in the answer (false for usage-missing, and for anything not complete). */
  usageReported: boolean;
}

/** The live record of one request, filled in by the handler and the faults, finished on close. */
export interface OutcomeDraft {
  outcome: Outcome;
  /** The handler's own usage, before any usage fault rewrote it on the wire. */
  planned: UsageBuckets | null;
  /** Set when a stream fault cut the stream (the writer may still have ended it cleanly with an error event). */
  cut: boolean;
  garbled: boolean;
  usageMode: UsageMode | null;
}

type UsageMode = { kind: 'missing' } | { kind: 'inflated'; factor: number };

const CALL_TAG = /\[\[sim:call=([A-Za-z0-9_.:-]{1,128})\]\]/;

function callTagOf(rawBody: string): string | null {
  return CALL_TAG.exec(rawBody)?.[1] ?? null;
}

export function newDraft(seq: number, route: string, path: string, body: unknown, raw: string, streaming: boolean): OutcomeDraft {
  const model =
    typeof body === 'object' && body !== null && typeof (body as { model?: unknown }).model === 'string'
      ? (body as { model: string }).model
      : null;
  return {
    outcome: {
      seq,
      route,
      path,
      model,
      callTag: callTagOf(raw),
      streaming,
      fault: null,
      status: null,
      delivered: 'none',
      refused: false,
      events: 0,
      usage: null,
      usageReported: false,
    },
    planned: null,
    cut: false,
    garbled: false,
    usageMode: null,
  };
}

/** Fills in the record from how the response ended. Called once, when the response or its socket closes. */
export function finishDraft(d: OutcomeDraft, res: ServerResponse): Outcome {
  const o = d.outcome;
  o.status = res.headersSent ? res.statusCode : null;
  if (o.status === null || o.status >= 400) {
    o.delivered = 'none';
    o.refused = true;
  } else if (d.garbled) {
    o.delivered = 'garbled';
  } else if (d.cut || !res.writableFinished) {
    o.delivered = o.events > 0 ? 'partial' : 'none';
  } else {
    o.delivered = 'complete';
  }
  if (o.delivered === 'complete' && d.planned) {
    const billed = { ...d.planned };
    if (d.usageMode?.kind === 'inflated') billed.output *= d.usageMode.factor;
    o.usage = billed;
    o.usageReported = d.usageMode?.kind !== 'missing';
  }
  return o;
}

/** Token-count keys a usage rewrite multiplies: the output figure of each wire format. */
const OUTPUT_KEYS = new Set(['output_tokens', 'completion_tokens']);

/**
 * The answer as a usage fault puts it on the wire: every `usage` object removed (missing), or its output
 * figure multiplied (inflated). Pure: returns a copy.
 */
export function rewriteUsage(value: unknown, mode: UsageMode): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteUsage(v, mode));
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'usage' && typeof v === 'object' && v !== null) {
      if (mode.kind === 'missing') continue;
      const u: Record<string, unknown> = { ...(v as Record<string, unknown>) };
      for (const key of OUTPUT_KEYS) if (typeof u[key] === 'number') u[key] = (u[key] as number) * mode.factor;
      out[k] = u;
      continue;
    }
    out[k] = rewriteUsage(v, mode);
  }
  return out;
}
