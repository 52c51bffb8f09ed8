// One log line per request, when its answer is finished or its client has left, so an operator can follow a call
// by its request id. Never a secret: keys by prefix, routes by name, URLs without query values.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type CallFacts, recordedCallFacts } from './call-facts.ts';
import { requestSlot } from './request-slots.ts';

/** What one finished request came to, for the log line and for anyone else observing answers (metrics). */
export interface RequestOutcome {
  requestId: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  /** Time until the first byte of the answer, for a streamed call; the whole duration otherwise. */
  ttfbMs: number;
  call?: CallFacts;
}

export type OutcomeObserver = (outcome: RequestOutcome) => void;

/** The URL with every query value replaced, so a credential in the query never reaches a log. */
function redactedUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const keys = url
    .slice(q + 1)
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => `${pair.split('=')[0]}=[redacted]`);
  return `${url.slice(0, q)}?${keys.join('&')}`;
}

/** Fastify's request serializer, for every log line that carries `req`: no headers, no query values. */
export function requestSerializer(req: { method?: string; url?: string }) {
  return { method: req.method, url: redactedUrl(req.url ?? '') };
}

const LOGS_INFO = new Set(['trace', 'debug', 'info']);

const startedAt = requestSlot<bigint>('started_at');
const answeredAt = requestSlot<bigint>('answered_at');
const recorded = requestSlot<true>('outcome_recorded');

/** nginx's status for a request whose client closed the connection before its answer ended. */
export const CLIENT_CLOSED_REQUEST = 499;

export function installAccessLog(app: FastifyInstance, observers: OutcomeObserver[] = []): void {
  // Fastify's onResponse runs when an answer is finished, never for one whose client left first: without
  // the close, those calls (charged all the same) would have no line and no place in the metrics.
  app.addHook('onRequest', (req, reply, done) => {
    startedAt.set(req, process.hrtime.bigint());
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) void record(req, reply, CLIENT_CLOSED_REQUEST);
    });
    done();
  });
  app.addHook('onResponse', (req, reply) => record(req, reply));

  async function record(req: FastifyRequest, reply: FastifyReply, status?: number): Promise<void> {
    if (recorded.get(req)) return;
    recorded.set(req, true);
    answeredAt.set(req, process.hrtime.bigint());
    await recordedCallFacts(req)?.settled;
    const outcome = outcomeOf(req, reply, status);
    // The fields are built only when the line is written (a bench or a quiet deployment logs at warn).
    if (LOGS_INFO.has(req.log.level)) req.log.info(logFields(outcome), outcome.call ? 'call completed' : 'request completed');
    for (const observe of observers) observe(outcome);
  }
}

function outcomeOf(req: FastifyRequest, reply: FastifyReply, status = reply.raw.statusCode): RequestOutcome {
  // The answer's end, not the charge's: a client's latency is what it waited.
  const end = answeredAt.get(req) ?? process.hrtime.bigint();
  const start = startedAt.get(req) ?? end;
  const call = recordedCallFacts(req);
  const outcome: RequestOutcome = {
    requestId: req.id,
    method: req.method,
    path: redactedUrl(req.url),
    // A hijacked (streamed) answer's status is on the raw response.
    status,
    durationMs: msBetween(start, end),
    ttfbMs: msBetween(start, call?.firstByteAt ?? end),
  };
  if (call) outcome.call = call;
  return outcome;
}

const msBetween = (start: bigint, end: bigint) => Number(end - start) / 1e6;

function logFields(o: RequestOutcome): Record<string, unknown> {
  const fields: Record<string, unknown> = { method: o.method, path: o.path, status: o.status, durationMs: Math.round(o.durationMs) };
  const c = o.call;
  if (!c) return fields;
  return {
    ...fields,
    door: c.door,
    model: c.model,
    vendor: c.vendor,
    route: c.route,
    fallbackDepth: c.fallbackDepth,
    failedRoutes: c.failedRoutes.length ? c.failedRoutes : undefined,
    tokensIn: c.tokensIn,
    tokensOut: c.tokensOut,
    chargedNano: c.chargedNano === undefined ? undefined : String(c.chargedNano),
    ttfbMs: Math.round(o.ttfbMs),
    keyPrefix: c.keyPrefix,
    refusedStatus: c.refusedStatus,
    traceId: c.traceId,
  };
}
