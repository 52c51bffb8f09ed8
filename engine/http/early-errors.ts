// Errors that happen before any route is found: a URL Fastify cannot decode, and what Node's HTTP parser
// refuses itself (headers too large, a request that timed out, bytes that are not HTTP). Clients of the
// official SDKs read every error in a door's error body, so these answer in it too instead of Fastify's default.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Runtime } from '../catalog/runtime.ts';
import { errorBodyOf } from '../catalog/wire-format.ts';
import { type ErrorBody, errors, type GatewayError, renderError } from '../core/errors.ts';
import { sendError } from './reply-error.ts';

/** Which error body a path's door answers in; undefined (the gateway's own) for paths no door serves. */
export type BodyForPath = (path: string) => ErrorBody | undefined;

/** The error body of the door whose path the (possibly malformed) path begins with, the longest such. */
export function errorBodyOfPath(runtime: Runtime, path: string): ErrorBody | undefined {
  const doors = Object.values(runtime.snapshot().config.doors).filter((d) => path.startsWith(d.path));
  doors.sort((a, b) => b.path.length - a.path.length);
  return doors[0] ? errorBodyOf(doors[0]) : undefined;
}

/** Fastify's `frameworkErrors`: a URL it cannot decode is the client's mistake, a 400 in the door's error body. */
export function frameworkErrorReply(bodyFor: BodyForPath) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    const path = (req.raw.url ?? '').split('?')[0]!;
    const refusal =
      err.code === 'FST_ERR_BAD_URL'
        ? errors.invalidRequest('The request URL is not valid (a malformed percent-encoding).')
        : errors.invalidRequest('Malformed request.');
    void sendError(reply, refusal, bodyFor(path));
  };
}

function parserRefusal(code: string | undefined): GatewayError {
  if (code === 'HPE_HEADER_OVERFLOW') return errors.headersTooLarge();
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return errors.requestTimeout();
  return errors.invalidRequest('Malformed HTTP request.');
}

/** Fastify's `clientErrorHandler`: Node's parser refused the request before Fastify saw it. */
export function clientErrorReply(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const refusal = parserRefusal(err.code);
    // The path is not known here (the parser may have stopped before it): the gateway's own body, as for unknown paths.
    const body = JSON.stringify(renderError(refusal).body);
    socket.write(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
