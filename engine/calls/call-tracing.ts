// A model door's call as a trace (engine/telemetry): started before anything else of the call, so admission,
// each route attempt and the settle are its children, and ended once the call is settled with what the door
// knows then: the status, the route that answered, the error.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../core/errors.ts';
import type { CallFacts } from '../http/call-facts.ts';
import type { CallTrace } from '../telemetry/call-trace.ts';
import { errorTypeOf } from '../telemetry/genai.ts';
import type { Telemetry } from '../telemetry/sdk.ts';

/** The call's trace, or null with telemetry off (one check, nothing made). Its id goes on the call's log line. */
export function startCallTrace(
  telemetry: Telemetry | null | undefined,
  req: FastifyRequest,
  door: string,
  facts: CallFacts,
): CallTrace | null {
  if (!telemetry) return null;
  const trace = telemetry.startCall({ door, requestId: req.id, headers: req.headers });
  facts.traceId = trace.traceId;
  return trace;
}

/** Ends the call's span: the status the client got (the error's, when one is still to be answered). */
export function endCallTrace(trace: CallTrace | null, facts: CallFacts, reply: FastifyReply, error?: unknown): void {
  if (!trace) return;
  const status = error === undefined ? reply.raw.statusCode : error instanceof GatewayError ? error.status : 500;
  trace.end({
    status,
    errorType: error === undefined ? undefined : errorTypeOf(error),
    route: facts.route,
    fallbackDepth: facts.fallbackDepth,
  });
}
