// The client's side of a relayed answer (a stream's frames, or audio's bytes), written with back-pressure.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { CallSignal } from './call-signal.ts';

/**
 * The client's side of the stream: opened with the first frame, written while the client is there. Frames
 * for a client that has left are dropped on the spot, so reading on costs no memory. A write the socket
 * cannot take yet waits for it to drain (the caller stops reading the vendor meanwhile); a client that does
 * not drain within `stallMs` is disconnected and counts as gone.
 */
export class ClientStream {
  private opened = false;

  constructor(
    private readonly reply: FastifyReply,
    private readonly headers: Record<string, string>,
    private readonly gone: CallSignal,
    private readonly stallMs: number,
    private readonly log: Pick<FastifyBaseLogger, 'warn'>,
  ) {}

  private get closed(): boolean {
    const res = this.reply.raw;
    // The socket can be gone before the response object hears of it (the client's FIN read, its close event not
    // yet run): a frame written then goes nowhere.
    return this.gone.aborted || res.destroyed || res.writableEnded || res.socket?.destroyed === true;
  }

  async write(frames: string[]): Promise<void> {
    if (this.closed) return;
    this.open();
    if (!this.reply.raw.write(frames.join(''))) await this.drainedOrDropped();
  }

  /** Bytes as they are (audio), with back-pressure as for frames. */
  async writeBytes(chunk: Buffer): Promise<void> {
    if (this.closed) return;
    this.open();
    if (!this.reply.raw.write(chunk)) await this.drainedOrDropped();
  }

  /** Cuts the answer short, so the client can tell it did not receive it whole. */
  abort(): void {
    if (!this.opened) this.reply.hijack();
    this.reply.raw.destroy();
  }

  private open(): void {
    if (this.opened) return;
    this.reply.hijack();
    this.reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...this.headers,
    });
    this.opened = true;
  }

  private async drainedOrDropped(): Promise<void> {
    const res = this.reply.raw;
    const drained = await new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        res.off('drain', onDrain);
        res.off('close', onClose);
        resolve(ok);
      };
      const onDrain = () => done(true);
      const onClose = () => done(true);
      const timer = setTimeout(() => done(false), this.stallMs);
      res.on('drain', onDrain);
      res.on('close', onClose);
    });
    if (!drained && !this.closed) {
      this.log.warn({ stallMs: this.stallMs, buffered: res.writableLength }, 'streaming client stopped reading; disconnected');
      res.destroy();
    }
  }

  /** Ends the response; a client gone before the first frame gets nothing more, and the reply is not sent later. */
  close(): void {
    if (!this.opened) this.reply.hijack();
    if (!this.reply.raw.writableEnded) this.reply.raw.end();
  }
}
