// What an HTTP/2 call sends and gets back, apart from the sessions it travels on (http2-origin.ts): the
// request's headers as HTTP/2 takes them, and the answer's headers and body as the gateway reads them (the
// headers' shape, and the body's two reads, are the same for the HTTP/1.1 pools).
import http2, { type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import { PassThrough, type Readable } from 'node:stream';

/** An answer's body as the gateway reads it: undici's bodies and these both are one. */
export interface AnswerBody extends Readable {
  text(): Promise<string>;
  dump(): Promise<void>;
}

/** Headers a request may not carry in HTTP/2 (RFC 9113 8.2.2); Node refuses them. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'te']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
const UNSAFE_VALUE = /[\r\n\0]/;

/**
 * The request's headers for HTTP/2, lowercased, without the connection-specific ones. A name that is not a
 * token or a value with a line break is refused here, for this call alone: Node would destroy the whole
 * session (every call on it) for a bad name, and pass a line break on to the vendor.
 */
export function http2Headers(
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | Buffer | undefined,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ':method': method, ':path': path };
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (CONNECTION_HEADERS.has(lower)) continue;
    if (!TOKEN.test(lower) || UNSAFE_VALUE.test(value))
      throw new Error(`the header ${JSON.stringify(name.slice(0, 40))} cannot be sent to the vendor`);
    out[lower] = value;
  }
  if (body !== undefined) out['content-length'] = Buffer.byteLength(body);
  return out;
}

/** An answer's headers, one lowercased string each (repeated ones joined), without HTTP/2's pseudo-headers. */
export function answerHeaders(h: IncomingHttpHeaders | Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined && !k.startsWith(':')) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
  return out;
}

/**
 * The answer's body: the stream's data, with the two reads the gateway uses on an answer (all of it as text,
 * or none of it). An answer the vendor did not end (reset, its connection dropped, or shorter than its
 * content-length) errors, as undici's bodies do: Node's stream ends either way, with the close code in
 * `rstCode`, and a cut answer would read as whole. `cancel` ends the vendor's stream for a reader that stopped
 * early (the origin's, which counts the resets a session sends).
 */
export function answerBody(stream: ClientHttp2Stream, contentLength: string | undefined, cancel: () => void): AnswerBody {
  const body = new PassThrough() as PassThrough & Partial<AnswerBody>;
  // Its readers see its errors; one that has not started reading yet (the binary door settles first) must not
  // take the process down with them.
  body.on('error', () => {});
  const cut = (why: string) => new Error(`the vendor's answer stopped before its end (${why})`);
  const expected = contentLength === undefined ? undefined : Number(contentLength);
  let received = 0;
  if (expected !== undefined) stream.on('data', (chunk: Buffer) => (received += chunk.length));
  stream.pipe(body, { end: false });
  stream.once('end', () => {
    // The close code is set before the end when the stream was closed under it; unset or NO_ERROR when the
    // vendor ended it (a reset with NO_ERROR mid-answer looks the same: only a content-length tells).
    const code = stream.rstCode;
    if (code !== undefined && code !== http2.constants.NGHTTP2_NO_ERROR) body.destroy(cut(`stream code ${code}`));
    else if (expected !== undefined && received !== expected) body.destroy(cut(`${received} of ${expected} bytes`));
    else body.end();
  });
  stream.on('error', (e) => body.destroy(e));
  stream.once('close', () => {
    if (!body.writableEnded && !body.destroyed) body.destroy(cut(`stream code ${stream.rstCode}`));
  });
  // A reader that stops early (a dump, a relay that gives up) ends the vendor's stream too. Not one whose
  // answer the vendor ended: a reset per call is what servers' rapid-reset defence counts (nghttp2 ends the
  // connection after 1,000 in a burst, every call on it failing).
  body.once('close', () => {
    if (!stream.destroyed && !stream.readableEnded) cancel();
  });
  body.text = async () => {
    const parts: Buffer[] = [];
    for await (const part of body) parts.push(part as Buffer);
    return Buffer.concat(parts).toString('utf8');
  };
  body.dump = async () => {
    body.destroy();
  };
  return body as AnswerBody;
}
