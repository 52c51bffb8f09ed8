// Node's HTTP/2 client behind undici's Dispatcher interface, so the upstream client sends every call one way
// whatever the vendor speaks. Node's client rather than undici's own HTTP/2, which fails calls on a graceful
// GOAWAY among other faults: docs/decisions/http2-upstream.md.
import { Dispatcher } from 'undici';
import { CallAbort } from './call-signal.ts';
import { Http2Origin, type Http2OriginOptions, NotHttp2 } from './http2-origin.ts';

/** The callbacks undici's own `request` gives a dispatcher (its RequestHandler). */
type Handler = Required<Pick<Dispatcher.DispatchHandler, 'onConnect' | 'onHeaders' | 'onData' | 'onComplete' | 'onError'>>;

export class Http2Dispatcher extends Dispatcher {
  private readonly origin: Http2Origin;
  /** The TLS handshake chose HTTP/1.1: every call goes to `http1`, until restart. */
  private http1Only = false;

  constructor(
    origin: string,
    opts: Http2OriginOptions,
    private readonly http1: Dispatcher,
  ) {
    super();
    this.origin = new Http2Origin(origin, opts);
  }

  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    if (this.http1Only) return this.http1.dispatch(opts, handler);
    // Every failure of the call reaches the handler; one thrown by the handler itself must not go unhandled.
    this.send(opts, handler as Handler).catch((e: Error) => {
      try {
        handler.onError?.(e);
      } catch {}
    });
    return true;
  }

  private async send(opts: Dispatcher.DispatchOptions, handler: Handler): Promise<void> {
    // undici's abort: the caller's signal, or a reader that stopped early. Before the answer it stops the call;
    // after, it ends the vendor's stream (the body's reader stopping is answerBody's cancel).
    const stop = new CallAbort();
    let body: Awaited<ReturnType<Http2Origin['request']>>['body'] | undefined;
    let done = false;
    const fail = (err: Error) => {
      if (done) return;
      done = true;
      handler.onError(err);
    };
    handler.onConnect((err?: Error) => {
      const reason = err ?? new Error('the call was stopped');
      stop.abort(reason);
      body?.destroy();
      fail(reason);
    });
    if (stop.aborted) return;
    let answer: Awaited<ReturnType<Http2Origin['request']>>;
    try {
      answer = await this.origin.request(
        {
          method: opts.method as 'GET' | 'POST',
          path: opts.path,
          headers: (opts.headers ?? {}) as Record<string, string>,
          body: opts.body as string | Buffer | undefined,
        },
        stop,
      );
    } catch (e) {
      if (e instanceof NotHttp2 && !stop.aborted) {
        this.http1Only = true;
        return void this.http1.dispatch(opts, handler);
      }
      return fail(e as Error);
    }
    if (done) return void answer.body.destroy();
    body = answer.body;
    const raw: string[] = [];
    for (const [name, value] of Object.entries(answer.headers)) raw.push(name, value);
    const resume = () => body?.resume();
    handler.onHeaders(answer.status, raw as unknown as Buffer[], resume, '');
    body.on('data', (chunk: Buffer) => {
      if (!done && handler.onData(chunk) === false) body?.pause();
    });
    body.once('end', () => {
      if (done) return;
      done = true;
      handler.onComplete([]);
    });
    body.once('error', fail);
  }

  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    this.origin.close();
    if (callback) return void queueMicrotask(callback);
    return Promise.resolve();
  }

  override destroy(): Promise<void>;
  override destroy(err: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(err: Error | null, callback: () => void): void;
  override destroy(a?: Error | null | (() => void), b?: () => void): Promise<void> | void {
    this.origin.close();
    const callback = typeof a === 'function' ? a : b;
    if (callback) return void queueMicrotask(callback);
    return Promise.resolve();
  }
}
