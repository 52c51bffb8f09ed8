// HTTP/2 to one vendor origin, on Node's own http2 client: calls share a connection (a session), up to the
// configured streams or what the vendor allows, whichever is fewer; more calls open more sessions.
//
// Why not undici's HTTP/2 (allowH2): in undici 7 a vendor's graceful GOAWAY (a server retiring a connection,
// every stream it took allowed to finish) ended the calls in flight on it: through the gateway, 4 of 5 open
// streams failed as 502 and the fifth was cut, all five worked by the vendor. Node's client lets such streams
// finish, and refuses only the ones the vendor says it never took (REFUSED_STREAM), which are safe to send
// again on a new session.
//
// Whether an origin speaks HTTP/2 is the TLS handshake's answer (ALPN). One that answers http/1.1 is
// remembered and served by the HTTP/1.1 pool, one call per connection.
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { isIP } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { PassThrough, type Readable } from 'node:stream';
import { onAbort, type CallSignal } from './call-signal.ts';

/** An answer's body as the gateway reads it: undici's body and an HTTP/2 stream both are one. */
export interface AnswerBody extends Readable {
  text(): Promise<string>;
  dump(): Promise<void>;
}

export interface Http2Request {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

export interface Http2Answer {
  status: number;
  headers: Record<string, string>;
  body: AnswerBody;
}

export interface Http2OriginOptions {
  /** Most calls at once on one session (the vendor's own limit may be lower). */
  streams: number;
  connectTimeoutMs: number;
  /** A session with no call this long is closed. */
  idleMs: number;
  tls?: ConnectionOptions;
}

/** The origin answered the TLS handshake without HTTP/2: its calls go to the HTTP/1.1 pool. */
export class NotHttp2 extends Error {}

interface Session {
  session: ClientHttp2Session;
  active: number;
  /** GOAWAY received or closing: no new stream goes on it. */
  retired: boolean;
}

/** Headers a request may not carry in HTTP/2 (RFC 9113 8.2.2); Node refuses them. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'te']);

export class Http2Origin {
  private readonly sessions: Session[] = [];
  private opening: Promise<Session> | null = null;
  private closed = false;

  constructor(
    private readonly origin: string,
    private readonly opts: Http2OriginOptions,
  ) {}

  async request(req: Http2Request, signal: CallSignal | undefined): Promise<Http2Answer> {
    // A stream the vendor refused unprocessed (its GOAWAY came first) is sent once more, on a new session.
    for (let attempt = 1; ; attempt++) {
      const s = await this.sessionWithRoom();
      if (signal?.aborted) {
        this.release(s); // stopped while a connection was being opened: nothing sent
        throw signal.reason ?? new Error('the call was stopped');
      }
      try {
        return await this.send(s, req, signal);
      } catch (e) {
        if (attempt >= 2 || !(e instanceof Refused) || signal?.aborted) throw e;
      }
    }
  }

  close(): void {
    this.closed = true;
    for (const s of this.sessions.splice(0)) s.session.close();
  }

  /** A session with room, its slot taken for the caller (given back when the stream closes, or by `send`). */
  private async sessionWithRoom(): Promise<Session> {
    for (;;) {
      const s = this.sessions.find((x) => !x.retired && x.active < this.limitOf(x));
      if (s) {
        s.active++;
        return s;
      }
      // One handshake at a time: a burst waits for it rather than opening a session per call.
      this.opening ??= this.open().finally(() => (this.opening = null));
      await this.opening;
    }
  }

  private release(s: Session): void {
    s.active--;
    if (s.retired && s.active === 0) s.session.close();
  }

  private limitOf(s: Session): number {
    const theirs = s.session.remoteSettings?.maxConcurrentStreams;
    return Math.max(1, Math.min(this.opts.streams, theirs ?? this.opts.streams));
  }

  private async open(): Promise<Session> {
    if (this.closed) throw new Error('the upstream client is closed');
    const socket = await this.handshake();
    const session = http2.connect(this.origin, { createConnection: () => socket, peerMaxConcurrentStreams: this.opts.streams });
    const s: Session = { session, active: 0, retired: false };
    const forget = () => {
      s.retired = true;
      const i = this.sessions.indexOf(s);
      if (i >= 0) this.sessions.splice(i, 1);
    };
    // Graceful: the streams it took finish, no new one starts; the session closes once they have.
    session.on('goaway', () => {
      s.retired = true;
      if (s.active === 0) session.close();
    });
    session.on('close', forget);
    session.on('error', forget); // each stream gets its own error
    session.setTimeout(this.opts.idleMs, () => {
      if (s.active === 0) {
        s.retired = true;
        session.close();
      }
    });
    // The vendor's SETTINGS say how many streams it takes; waiting for them keeps a burst within it. A vendor
    // that never sends them is a connection that failed (within the connect timeout, as the handshake).
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        session.destroy();
        reject(new Error(`no HTTP/2 settings from the vendor within ${this.opts.connectTimeoutMs} ms`));
      }, this.opts.connectTimeoutMs);
      session.once('remoteSettings', () => {
        clearTimeout(timer);
        resolve();
      });
      session.once('error', reject);
      session.once('close', () => reject(new Error('the vendor closed the connection before its settings')));
    });
    this.sessions.push(s);
    return s;
  }

  /** TLS with ALPN offering h2 and http/1.1: HTTP/2 only when the vendor picks it. */
  private handshake(): Promise<TLSSocket> {
    const url = new URL(this.origin);
    const host = url.hostname.replace(/^\[|\]$/g, ''); // an IPv6 literal without its brackets
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({ ...this.opts.tls, host, port: Number(url.port || 443), servername: isIP(host) ? undefined : host, ALPNProtocols: ['h2', 'http/1.1'] });
      const timer = setTimeout(() => socket.destroy(new Error(`connect timeout after ${this.opts.connectTimeoutMs} ms`)), this.opts.connectTimeoutMs);
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        if (socket.alpnProtocol === 'h2') return resolve(socket);
        socket.destroy();
        reject(new NotHttp2(`${this.origin} does not speak HTTP/2`));
      });
      socket.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  private send(s: Session, req: Http2Request, signal: CallSignal | undefined): Promise<Http2Answer> {
    const headers: Record<string, string | number> = { ':method': req.method, ':path': req.path };
    for (const [name, value] of Object.entries(req.headers)) {
      const lower = name.toLowerCase();
      if (!CONNECTION_HEADERS.has(lower)) headers[lower] = value;
    }
    if (req.body !== undefined) headers['content-length'] = Buffer.byteLength(req.body);
    let stream: ClientHttp2Stream;
    try {
      stream = s.session.request(headers, { endStream: req.body === undefined });
    } catch (e) {
      // The session went away between picking it and asking (GOAWAY, closed): nothing was sent.
      s.retired = true;
      this.release(s);
      return Promise.reject(new Refused((e as Error).message));
    }
    stream.once('close', () => this.release(s));
    if (req.body !== undefined) stream.end(req.body);
    return new Promise((resolve, reject) => {
      // Ended at the vendor (CANCEL) and, for whoever reads the body, with an error, as undici's aborted bodies
      // do: a clean end would read as the vendor's whole answer.
      const forget = signal
        ? onAbort(signal, () => {
            stream.close(http2.constants.NGHTTP2_CANCEL);
            stream.destroy(signal.reason instanceof Error ? signal.reason : new Error('the call was stopped'));
          })
        : () => {};
      stream.once('close', forget);
      stream.once('response', (h) => {
        stream.removeListener('error', beforeAnswer); // from here the body's reader sees it (answerBody)
        resolve({ status: Number(h[':status']), headers: plainHeaders(h), body: answerBody(stream) });
      });
      const beforeAnswer = (e: NodeJS.ErrnoException) => {
        const refused = stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM;
        reject(refused ? new Refused(e.message) : e);
      };
      stream.once('error', beforeAnswer);
      stream.once('close', () => {
        if (signal?.aborted) reject(signal.reason ?? new Error('aborted'));
        else reject(new Error(`the vendor closed the stream before answering (code ${stream.rstCode})`));
      });
    });
  }
}

/** The vendor did not take the stream (REFUSED_STREAM, or its session was going away): safe to send again. */
class Refused extends Error {}

function plainHeaders(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !k.startsWith(':')) out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  return out;
}

/**
 * The answer's body: the stream's data, with the two reads the gateway uses on an answer (all of it as text,
 * or none of it). A stream the vendor did not end (reset, or its connection dropped) errors, as undici's bodies
 * do: Node's stream ends either way, with the close code in `rstCode`, and a cut answer would read as whole.
 */
function answerBody(stream: ClientHttp2Stream): AnswerBody {
  const body = new PassThrough() as PassThrough & Partial<AnswerBody>;
  const cut = () => new Error(`the vendor's answer stopped before its end (stream code ${stream.rstCode})`);
  stream.pipe(body, { end: false });
  stream.once('end', () => {
    // Set before the end when the stream was closed under it; unset or NO_ERROR when the vendor ended it.
    if (stream.rstCode === undefined || stream.rstCode === http2.constants.NGHTTP2_NO_ERROR) body.end();
    else body.destroy(cut());
  });
  stream.on('error', (e) => body.destroy(e));
  stream.once('close', () => {
    if (!body.writableEnded && !body.destroyed) body.destroy(cut());
  });
  // A reader that stops early (a dump, a relay that gives up) ends the vendor's stream too.
  body.once('close', () => {
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
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
