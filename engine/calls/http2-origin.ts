// HTTP/2 sessions to one vendor origin, so long streams share a few connections instead of one each. Whether an
// origin speaks HTTP/2 is the TLS handshake's answer; one that picks HTTP/1.1 fails with NotHttp2 and is served by
// the pool from then on (docs/decisions/http2-upstream.md).
import http2, { type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { isIP } from 'node:net';
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { type CallSignal, onAbort } from './call-signal.ts';
import { type AnswerBody, answerBody, answerHeaders, http2Headers } from './http2-answer.ts';

export type { AnswerBody };

interface Http2Request {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer | undefined;
}

interface Http2Answer {
  status: number;
  headers: Record<string, string>;
  body: AnswerBody;
}

export interface Http2OriginOptions {
  /** Most calls at once on one session (the vendor's own limit may be lower). */
  streams: number;
  /** Most sessions at once (limits.yaml vendor_connections); past it a call waits for room. */
  maxSessions: number;
  connectTimeoutMs: number;
  /** A session with no call this long is closed. */
  idleMs: number;
  /** A session with calls on it is pinged this often; one that does not answer within `pingTimeoutMs` is dropped. */
  pingEveryMs?: number;
  pingTimeoutMs?: number;
  tls?: ConnectionOptions | undefined;
}

/** The origin answered the TLS handshake without HTTP/2: its calls go to the HTTP/1.1 pool. */
export class NotHttp2 extends Error {}

/** The vendor did not take the stream (REFUSED_STREAM, or its session was going away): safe to send again. */
class Refused extends Error {}

interface Session {
  session: ClientHttp2Session;
  active: number;
  /** GOAWAY received or closing: no new stream goes on it. */
  retired: boolean;
  pinging: boolean;
  /** The last stream the vendor's GOAWAY says it took: later ones it never processed. */
  goawayLast?: number;
  /** Streams this client reset (stopped calls, answers it gave up on). */
  resets: number;
}

/**
 * Resets one session may send before it takes no new calls. Servers on nghttp2 end a connection that resets
 * streams faster than they allow (the HTTP/2 rapid-reset defence: a burst of 1,000, then 33 a second) with
 * GOAWAY INTERNAL_ERROR, which fails every call on it mid-answer. A burst of stopped calls (clients leaving)
 * is a legitimate way to get there; retired at 500, a session stays under the burst with its calls in flight.
 */
const RESETS_PER_SESSION = 500;
/** A request body is written in pieces this size, each when the stream takes more (below). */
const BODY_PIECE = 16 * 1024;

const stopped = (signal: CallSignal) => (signal.reason instanceof Error ? signal.reason : new Error('the call was stopped'));

export class Http2Origin {
  private readonly sessions: Session[] = [];
  private opening: Promise<void> | null = null;
  /** Calls waiting for room, woken when a slot frees or a session goes (each looks again). */
  private waiters: Array<() => void> = [];
  private readonly pinger: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly origin: string,
    private readonly opts: Http2OriginOptions,
  ) {
    // A session can stop answering without closing (a vendor gone silent, or one Node gave up on after a bad
    // header block): its calls would wait for their time limits, or for ever. A ping finds it.
    this.pinger = setInterval(() => this.pingBusySessions(), opts.pingEveryMs ?? 15_000);
    this.pinger.unref();
  }

  async request(req: Http2Request, signal: CallSignal | undefined): Promise<Http2Answer> {
    const headers = http2Headers(req.method, req.path, req.headers, req.body);
    // A stream the vendor refused unprocessed (its GOAWAY came first, or it was busy) is sent once more.
    try {
      return await this.send(await this.sessionWithRoom(signal), headers, req.body, signal);
    } catch (e) {
      if (!(e instanceof Refused) || signal?.aborted) throw e;
    }
    return this.send(await this.sessionWithRoom(signal), headers, req.body, signal);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.pinger);
    for (const s of this.sessions.splice(0)) s.session.close();
    this.wake();
  }

  /** A session with room, its slot taken for the caller (given back when its stream closes). */
  private async sessionWithRoom(signal: CallSignal | undefined): Promise<Session> {
    for (;;) {
      if (signal?.aborted) throw stopped(signal);
      if (this.closed) throw new Error('the upstream client is closed');
      const s = this.sessions.find((x) => !x.retired && x.active < this.limitOf(x));
      if (s) {
        s.active++;
        return s;
      }
      if (!this.opening && this.sessions.length < this.opts.maxSessions) this.opening = this.open().finally(() => (this.opening = null));
      await this.roomOrFailure(this.opening, signal);
    }
  }

  /** Waits for a slot to free or a session to open; rejects when the handshake waited for fails or the call stops. */
  private roomOrFailure(opening: Promise<void> | null, signal: CallSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      let stop = () => {};
      const finish = (err?: unknown) => {
        stop();
        this.waiters = this.waiters.filter((w) => w !== wake);
        if (err === undefined) resolve();
        else reject(err);
      };
      const wake = () => finish();
      this.waiters.push(wake);
      opening?.then(wake, finish);
      if (signal) stop = onAbort(signal, () => finish(stopped(signal)));
    });
  }

  private wake(): void {
    for (const w of this.waiters.slice()) w();
  }

  private release(s: Session): void {
    s.active--;
    if (s.retired && s.active === 0) s.session.close();
    this.wake();
  }

  private limitOf(s: Session): number {
    const theirs = s.session.remoteSettings?.maxConcurrentStreams;
    return Math.min(this.opts.streams, theirs ?? this.opts.streams); // a vendor's 0 means none for now
  }

  private async open(): Promise<void> {
    const socket = await this.handshake();
    // No server push: a pushed answer nobody reads stays buffered in the session until Node refuses its calls.
    const session = http2.connect(this.origin, {
      createConnection: () => socket,
      peerMaxConcurrentStreams: this.opts.streams,
      settings: { enablePush: false },
    });
    const s: Session = { session, active: 0, retired: false, pinging: false, resets: 0 };
    const forget = () => {
      s.retired = true;
      const i = this.sessions.indexOf(s);
      if (i >= 0) this.sessions.splice(i, 1);
      this.wake();
    };
    // Graceful: the streams it took finish, no new one starts; the session closes once they have. With an error
    // code Node destroys the session at once: the streams past `lastStreamID` were never processed and are sent
    // again (send), the others fail.
    session.on('goaway', (_code: number, lastStreamID: number) => {
      s.retired = true;
      s.goawayLast = lastStreamID;
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
    await this.settingsOf(session);
    if (this.closed) {
      session.close();
      throw new Error('the upstream client is closed');
    }
    this.sessions.push(s);
  }

  /** The vendor's SETTINGS say how many streams it takes; one that never sends them failed to connect. */
  private settingsOf(session: ClientHttp2Session): Promise<void> {
    return new Promise<void>((resolve, reject) => {
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
  }

  /** TLS with ALPN offering h2 and http/1.1: HTTP/2 only when the vendor picks it. */
  private handshake(): Promise<TLSSocket> {
    const url = new URL(this.origin);
    const host = url.hostname.replace(/^\[|\]$/g, ''); // an IPv6 literal without its brackets
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({
        ...this.opts.tls,
        host,
        port: Number(url.port || 443),
        servername: isIP(host) ? undefined : host,
        ALPNProtocols: ['h2', 'http/1.1'],
      });
      const timer = setTimeout(
        () => socket.destroy(new Error(`connect timeout after ${this.opts.connectTimeoutMs} ms`)),
        this.opts.connectTimeoutMs,
      );
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

  private pingBusySessions(): void {
    const timeoutMs = this.opts.pingTimeoutMs ?? 10_000;
    for (const s of this.sessions) {
      if (s.active === 0 || s.pinging || s.session.destroyed) continue;
      s.pinging = true;
      const timer = setTimeout(() => s.session.destroy(new Error(`the vendor did not answer a ping within ${timeoutMs} ms`)), timeoutMs);
      const answered = (err: Error | null) => {
        clearTimeout(timer);
        s.pinging = false;
        if (err && !s.session.destroyed) s.session.destroy(err);
      };
      try {
        if (!s.session.ping(answered)) answered(null); // too many pings in flight already: not a sign of death
      } catch (e) {
        answered(e as Error);
      }
    }
  }

  private send(
    s: Session,
    headers: ReturnType<typeof http2Headers>,
    body: string | Buffer | undefined,
    signal: CallSignal | undefined,
  ): Promise<Http2Answer> {
    let stream: ClientHttp2Stream;
    try {
      stream = s.session.request(headers, { endStream: body === undefined });
    } catch (e) {
      // The session went away between picking it and asking (GOAWAY, closed): nothing was sent.
      s.retired = true;
      this.release(s);
      return Promise.reject(new Refused((e as Error).message));
    }
    // Ends the stream at the vendor (CANCEL), counted; a body being read errors on that code (answerBody). One the
    // vendor already reset is only let go (no reset goes out).
    const giveUp = () => {
      if (stream.destroyed) return;
      if (stream.closed) return void stream.destroy();
      this.countReset(s);
      stream.close(http2.constants.NGHTTP2_CANCEL);
    };
    if (body !== undefined) writeBody(stream, body);
    // A vendor that answered before reading the whole upload (a 413, a 401) will not read the rest, and Node
    // would wait for it: the stream would never close and its slot would stay taken. Once the answer has ended
    // the upload is given up, after any reset of the vendor's own has been read.
    stream.once('end', () => {
      if (!stream.writableFinished) setImmediate(giveUp);
    });
    // Past the last stream a GOAWAY says the vendor took, it never processed the call: safe to send again.
    const notTaken = () => s.goawayLast !== undefined && (stream.id === undefined || stream.id > s.goawayLast);
    return new Promise((resolve, reject) => {
      let answered = false;
      const forget = signal ? onAbort(signal, giveUp) : undefined;
      const beforeAnswer = (e: NodeJS.ErrnoException) => {
        const refused = stream.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM || notTaken();
        reject(refused ? new Refused(e.message) : e);
      };
      stream.once('error', beforeAnswer);
      stream.once('response', (h) => {
        answered = true;
        stream.removeListener('error', beforeAnswer); // from here the body's reader sees it (answerBody)
        const status = Number(h[':status']);
        const contentLength = h['content-length'];
        // 204 and 304 carry no body whatever their content-length says (RFC 9110 8.6).
        const length = typeof contentLength === 'string' && status !== 204 && status !== 304 ? contentLength : undefined;
        resolve({ status, headers: answerHeaders(h), body: answerBody(stream, length, giveUp) });
      });
      // One listener for every stream's end: its slot, its stop, and (only when no answer came: an Error is not
      // free) the call's failure.
      stream.once('close', () => {
        this.release(s);
        forget?.();
        if (answered) return;
        if (signal?.aborted) reject(stopped(signal));
        else if (notTaken()) reject(new Refused(`the vendor went away before taking the stream (code ${stream.rstCode})`));
        else reject(new Error(`the vendor closed the stream before answering (code ${stream.rstCode})`));
      });
    });
  }

  /** A reset this client sent on `s`; past RESETS_PER_SESSION the session takes no new calls and closes once idle. */
  private countReset(s: Session): void {
    if (++s.resets >= RESETS_PER_SESSION) s.retired = true;
  }
}

/** Writes a request body as the stream takes it: written whole, all of it would count against the session's memory until sent. */
function writeBody(stream: ClientHttp2Stream, body: string | Buffer): void {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  let at = 0;
  const more = (): void => {
    while (!stream.destroyed) {
      const piece = bytes.subarray(at, at + BODY_PIECE);
      at += piece.length;
      if (at >= bytes.length) return void stream.end(piece);
      if (!stream.write(piece)) return void stream.once('drain', more);
    }
  };
  more();
}
