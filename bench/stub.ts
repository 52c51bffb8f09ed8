// The minimal upstream the bench loads: vendor B chat completions and vendor A messages, JSON or SSE, usage
// included, and nothing else (no auth, no faults, no usage rules), so it is never the bottleneck the way the
// full simulator could be. Answers are built once per (shape, model, chunking) and reused.
//
// A base URL may carry its own chunking: `/s/<chunks>/<delayMs>` in front of `/v1/…` streams that many text
// chunks that many milliseconds apart (the slow-stream row points a vendor's URL there); the bare base URL
// streams STUB_CHUNKS chunks (default 8) with no delay.
//
//   node --import tsx bench/stub.ts      STUB_PORT (default 0), prints "bench stub on http://127.0.0.1:PORT"
//
// With STUB_TLS_CERT and STUB_TLS_KEY (PEM files) it serves https instead, HTTP/2 or HTTP/1.1 as the client
// offers (ALPN), for bench/vendor-http2.ts.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createSecureServer } from 'node:http2';

const DEFAULT_CHUNKS = Number(process.env.STUB_CHUNKS ?? 8);
const INPUT_TOKENS = 12;
const WORD = 'bench ';

interface Chunking {
  chunks: number;
  delayMs: number;
}

type Shape = 'chat' | 'messages';

/** `/s/8/100/v1/messages` → messages, 8 chunks 100 ms apart; `/v1/chat/completions` → chat, defaults. */
function parsePath(url: string): { shape: Shape; chunking: Chunking } | undefined {
  const m = /^(?:\/s\/(\d+)\/(\d+))?\/v1\/(chat\/completions|messages)(?:\?|$)/.exec(url);
  if (!m) return undefined;
  const chunking =
    m[1] === undefined ? { chunks: DEFAULT_CHUNKS, delayMs: 0 } : { chunks: Math.max(1, Number(m[1])), delayMs: Number(m[2]) };
  return { shape: m[3] === 'messages' ? 'messages' : 'chat', chunking };
}

const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

/** The whole JSON answer, or the SSE frames in order (the delay falls between frames that carry text). */
interface Answer {
  json: string;
  head: string[];
  pieces: string[];
  tail: string[];
}

function chatAnswer(model: string, chunks: number, includeUsage: boolean): Answer {
  const text = WORD.repeat(chunks);
  const usage = { prompt_tokens: INPUT_TOKENS, completion_tokens: chunks, total_tokens: INPUT_TOKENS + chunks };
  const id = 'chatcmpl-bench';
  const created = Math.floor(Date.now() / 1000);
  const json = JSON.stringify({
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage,
  });
  const chunk = (delta: object, finish: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  });
  return {
    json,
    head: [sse(chunk({ role: 'assistant', content: '' }))],
    pieces: Array.from({ length: chunks }, () => sse(chunk({ content: WORD }))),
    tail: [
      sse(chunk({}, 'stop')),
      ...(includeUsage ? [sse({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })] : []),
      'data: [DONE]\n\n',
    ],
  };
}

function messagesAnswer(model: string, chunks: number): Answer {
  const id = 'msg_bench';
  const text = WORD.repeat(chunks);
  const json = JSON.stringify({
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: INPUT_TOKENS, output_tokens: chunks },
  });
  const start = {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: INPUT_TOKENS, output_tokens: 1 },
  };
  return {
    json,
    head: [
      sse({ type: 'message_start', message: start }, 'message_start'),
      sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
    ],
    pieces: Array.from({ length: chunks }, () =>
      sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: WORD } }, 'content_block_delta'),
    ),
    tail: [
      sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
      sse(
        { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: chunks } },
        'message_delta',
      ),
      sse({ type: 'message_stop' }, 'message_stop'),
    ],
  };
}

const answers = new Map<string, Answer>();
function answerFor(shape: Shape, model: string, chunks: number, includeUsage: boolean): Answer {
  const k = `${shape}\0${model}\0${chunks}\0${includeUsage}`;
  let a = answers.get(k);
  if (!a) {
    a = shape === 'chat' ? chatAnswer(model, chunks, includeUsage) : messagesAnswer(model, chunks);
    if (answers.size < 1000) answers.set(k, a);
  }
  return a;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function stream(res: ServerResponse, a: Answer, delayMs: number): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(a.head.join(''));
  if (delayMs <= 0) {
    for (const p of a.pieces) res.write(p);
  } else {
    for (const p of a.pieces) {
      await sleep(delayMs);
      if (res.destroyed) return;
      res.write(p);
    }
  }
  res.end(a.tail.join(''));
}

function fail(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error' } }));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const route = req.method === 'POST' ? parsePath(req.url ?? '') : undefined;
  const parts: Buffer[] = [];
  for await (const p of req) parts.push(p as Buffer);
  if (!route) return fail(res, 404, `no such path: ${req.method} ${req.url}`);
  let body: { model?: unknown; stream?: unknown; stream_options?: { include_usage?: unknown } };
  try {
    body = JSON.parse(Buffer.concat(parts).toString('utf8'));
  } catch {
    return fail(res, 400, 'body is not JSON');
  }
  const model = typeof body.model === 'string' ? body.model : 'unknown';
  const includeUsage = body.stream_options?.include_usage === true;
  const a = answerFor(route.shape, model, route.chunking.chunks, includeUsage);
  if (body.stream === true) return stream(res, a, route.chunking.delayMs);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(a.json) });
  res.end(a.json);
}

const serve = (req: IncomingMessage, res: ServerResponse) => {
  handle(req, res).catch((e) => {
    if (!res.headersSent) fail(res, 500, String(e));
    else res.destroy();
  });
};
const tls =
  process.env.STUB_TLS_CERT && process.env.STUB_TLS_KEY
    ? { cert: readFileSync(process.env.STUB_TLS_CERT), key: readFileSync(process.env.STUB_TLS_KEY) }
    : undefined;
// The HTTP/2 compatibility API takes the same handler (request and response with the same methods it uses).
const server = tls ? createSecureServer({ ...tls, allowHTTP1: true }, serve as never) : createServer({ keepAliveTimeout: 60_000 }, serve);
server.listen(Number(process.env.STUB_PORT ?? 0), '127.0.0.1', () => {
  const addr = server.address();
  if (addr && typeof addr === 'object') console.log(`bench stub on ${tls ? 'https' : 'http'}://127.0.0.1:${addr.port}`);
});
process.on('SIGTERM', () => {
  if ('closeAllConnections' in server) server.closeAllConnections();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1_000).unref(); // HTTP/2 sessions do not close on their own
});
