// Every answer carries `x-request-id`, so a client's complaint can be matched with the gateway's log line.
// A client's own id is kept when it is one a log can hold safely (printable, bounded); otherwise one is made.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const REQUEST_ID_HEADER = 'x-request-id';
const MAX_CLIENT_ID_LENGTH = 128;
const PRINTABLE = /^[\x21-\x7e]+$/;

/** The client's id when it is sane, else undefined. */
function saneClientRequestId(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  return value.length <= MAX_CLIENT_ID_LENGTH && PRINTABLE.test(value) ? value : undefined;
}

/** Fastify's genReqId: the client's sane id, or a fresh UUID. */
export function requestIdFor(req: IncomingMessage): string {
  return saneClientRequestId(req.headers[REQUEST_ID_HEADER]) ?? randomUUID();
}
