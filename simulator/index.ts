// The bundled vendor simulator: imitates the wire formats of the vendors' HTTP APIs so the gateway, its tests,
// the benchmarks and `npm start` without credentials run with no network.
//
// Every named route serves every path under `/r/<route>`; the bare server URL is the route `default`.
//   POST /v1/messages                vendor A messages (JSON / SSE)
//   POST /v1/chat/completions        chat completions (vendors B–E)
//   POST /v1/responses               vendor B responses
//   POST /v1/images/generations      images (JSON);  POST /v1/images/edits (multipart)
//   POST /v1/audio/speech            speech bytes;   POST /v1/embeddings;  POST /v1/moderations
//   POST /v1/videos/generations      vendor D video job → {request_id}
//   GET  /v1/videos/{request_id}     job status;     GET /files/videos/{id}.mp4 (the video URL it hands out)
//
// Auth as the vendors check it: /v1/messages needs `x-api-key` (or `Authorization: Bearer`, which vendor A's SDK 1.x
// sends) (401) and `anthropic-version` (400) in vendor A's error shape; every other path except the video file needs `Authorization: Bearer …` (401, vendor B's shape).
// Any non-empty key is accepted. Usage rules and control tags: see common.ts (top comment) and
// docs in simulator/README.md.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { handleChat } from './chat.ts';
import { type ErrorFlavor, isObj, VendorError } from './common.ts';
import { applyFault, type Fault, FaultQueue, isStreaming } from './faults.ts';
import { attachDraft, type Ctx, type Job, readBody, type SimState, StreamCut, sendError } from './http.ts';
import {
  handleEmbeddings,
  handleImageEdit,
  handleImageGeneration,
  handleModerations,
  handleSpeech,
  handleVideoCreate,
  handleVideoFile,
  handleVideoGet,
  type MultipartBody,
} from './media.ts';
import { finishDraft, newDraft, type Outcome, type OutcomeDraft } from './outcomes.ts';
import { handleResponses } from './responses.ts';
import { handleMessages } from './vendor-a.ts';

export interface SimulatorOptions {
  host?: string | undefined; // default 127.0.0.1
  port?: number | undefined; // default 0 (random)
  /** Imitates vendor-side refusals (the gateway wires this from catalog rules); return null to accept. */
  refuse?: (req: { path: string; model: string; body: Record<string, unknown> }) => { status: number; message: string } | null;
  /** A model's context window in tokens: longer input is refused with 400 as the vendor refuses it; absent, nothing is. */
  contextWindow?: (model: string) => number | null | undefined;
  /** A model's most output in tokens: a larger limit is refused with 400, and with none sent output stops there, as the vendor does. */
  maxOutput?: (model: string) => number | null | undefined;
  /** When set, only these keys are accepted (401 in the vendor's shape for any other); default: any non-empty key. */
  acceptKeys?: string[];
  videoStepMs?: number | undefined; // how fast a video job advances per poll/tick (default 200)
  streamChunkDelayMs?: number | undefined; // delay between SSE events (default 0); real separate writes either way
}
export interface ReceivedRequest {
  route: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown /* parsed JSON, or for multipart {fields, files:[{name, filename, size}]} */;
  at: number;
}
export interface Simulator {
  url: string; // http://127.0.0.1:PORT
  routeUrl(route: string): string; // base URL U of a named route: `${url}/r/${route}`; the gateway then calls U/v1/messages etc.
  received: ReceivedRequest[];
  receivedOn(route: string): ReceivedRequest[];
  /** What was delivered for each request whose response has closed (see outcomes.ts), in order of closing. */
  outcomes: Outcome[];
  /** Resolves once every request received so far has its outcome (or after `timeoutMs`, default 10 s, rejecting). */
  outcomesSettled(timeoutMs?: number): Promise<void>;
  inject(route: string, fault: Fault): void; // faults queue per route; each applies `times` times (default 1)
  clearFaults(): void;
  reset(): void; // clear received + faults + jobs
  close(): Promise<void>;
}

export type { Fault } from './faults.ts';
export type { Delivery, Outcome, UsageBuckets } from './outcomes.ts';
export type { MultipartBody };

function splitRoute(pathname: string): { route: string; path: string } {
  const m = /^\/r\/([^/]+)(\/.*)?$/.exec(pathname);
  if (m) return { route: decodeURIComponent(m[1]!), path: m[2] ?? '/' };
  return { route: 'default', path: pathname };
}

const flavorOf = (path: string): ErrorFlavor => (path === '/v1/messages' || path.startsWith('/v1/messages/') ? 'a' : 'b');

async function parseBody(req: IncomingMessage, raw: Buffer): Promise<unknown> {
  if (raw.length === 0) return undefined;
  const type = String(req.headers['content-type'] ?? '');
  if (type.startsWith('multipart/form-data')) {
    try {
      const form = await new Request('http://simulator.local/', {
        method: 'POST',
        headers: { 'content-type': type },
        body: new Uint8Array(raw),
      }).formData();
      const out: MultipartBody = { fields: {}, files: [] };
      for (const [name, value] of form.entries()) {
        if (typeof value === 'string') out.fields[name] = value;
        else out.files.push({ name, filename: (value as File).name, size: (value as File).size });
      }
      return out;
    } catch {
      return { malformed: 'multipart', size: raw.length };
    }
  }
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const POST_HANDLERS: Readonly<Record<string, (ctx: Ctx) => void | Promise<void>>> = {
  '/v1/messages': handleMessages,
  '/v1/chat/completions': handleChat,
  '/v1/responses': handleResponses,
  '/v1/images/generations': handleImageGeneration,
  '/v1/images/edits': handleImageEdit,
  '/v1/audio/speech': handleSpeech,
  '/v1/embeddings': handleEmbeddings,
  '/v1/moderations': handleModerations,
  '/v1/videos/generations': handleVideoCreate,
};

const bearerOf = (authorization: string | string[] | undefined) => /^Bearer\s+(\S+)/i.exec(String(authorization ?? ''))?.[1] ?? '';

/** Auth as each vendor checks it: true when the request was refused (the answer sent). */
function authRefused(ctx: Ctx, flavor: ErrorFlavor, acceptKeys: readonly string[] | undefined): boolean {
  const { res } = ctx;
  const h = ctx.req.headers;
  const accepted = (key: string) => !acceptKeys || acceptKeys.includes(key);
  const hasBearer = /^Bearer\s+\S+/i.test(String(h.authorization ?? ''));
  if (flavor === 'a') {
    // Vendor A takes its key as `x-api-key`; it also accepts `Authorization: Bearer` (its own SDK 1.x sends that).
    if (!h['x-api-key'] && !hasBearer) sendError(res, 'a', 401, 'x-api-key header is required');
    else if (!h['anthropic-version']) sendError(res, 'a', 400, 'anthropic-version: header is required');
    else if (!accepted(String(h['x-api-key'] ?? bearerOf(h.authorization)))) sendError(res, 'a', 401, 'invalid x-api-key');
    else return false;
    return true;
  }
  if (!hasBearer)
    sendError(
      res,
      'b',
      401,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  else if (!accepted(bearerOf(h.authorization)))
    sendError(res, 'b', 401, 'Incorrect API key provided. You can find your API key in your account settings.');
  else return false;
  return true;
}

/** What `refuse` is asked: the path, and the model and fields of the body (a multipart form's fields). */
function refusalAsk(ctx: Ctx): { path: string; model: string; body: Record<string, unknown> } {
  const body = isObj(ctx.body) ? (isObj(ctx.body.fields) && Array.isArray(ctx.body.files) ? ctx.body.fields : ctx.body) : {};
  return { path: ctx.path, model: typeof body.model === 'string' ? body.model : '', body: body as Record<string, unknown> };
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return headers;
}

/** The outcome is final when the response closes (finished, cut or reset); once per request. */
function recordOnClose(draft: OutcomeDraft, req: IncomingMessage, res: ServerResponse, outcomes: Outcome[]): void {
  attachDraft(res, draft);
  // The socket's close too, for a reset before any answer; its listener goes with the request, since a
  // kept-alive socket serves many.
  const socket = req.socket;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    res.off('close', finish);
    socket.off('close', finish);
    outcomes.push(finishDraft(draft, res));
  };
  res.once('close', finish);
  socket.once('close', finish);
}

/** Answers a request no fault answered: the video file, auth, then the path's handler. */
async function dispatch(ctx: Ctx, opts: SimulatorOptions): Promise<void> {
  const { path, method, res } = ctx;
  if (method === 'GET') {
    const file = /^\/files\/videos\/([^/]+)\.mp4$/.exec(path);
    if (file) return handleVideoFile(ctx, decodeURIComponent(file[1]!));
  }
  const flavor = flavorOf(path);
  if (authRefused(ctx, flavor, opts.acceptKeys)) return;
  if (method === 'GET') {
    const video = /^\/v1\/videos\/([^/]+)$/.exec(path);
    if (video) return handleVideoGet(ctx, decodeURIComponent(video[1]!));
    return sendError(res, flavor, 404, `Unknown path: GET ${path}`);
  }
  if (method !== 'POST') return sendError(res, flavor, 405, `Method ${method} not allowed on ${path}`);
  const handler = POST_HANDLERS[path];
  if (!handler) return sendError(res, flavor, 404, `Unknown path: POST ${path}`);
  const refusal = opts.refuse?.(refusalAsk(ctx));
  if (refusal) return sendError(res, flavor, refusal.status, refusal.message);
  await handler(ctx);
}

/** A handler's throw as the vendor would answer it: its error, or the stream ended or cut where it was. */
function answerThrown(res: ServerResponse, flavor: ErrorFlavor, err: unknown): void {
  if (err instanceof StreamCut) return;
  if (err instanceof VendorError) {
    if (!res.headersSent) sendError(res, flavor, err.status, err.message, err.param);
    else res.end();
    return;
  }
  if (!res.headersSent) sendError(res, flavor, 500, `Simulator error: ${(err as Error).message}`);
  else res.destroy();
}

/** Listens on loopback (or `host`), keeping every socket so close() can end kept-alive ones; resolves with its URL. */
async function listen(server: Server, sockets: Set<Socket>, port: number, host: string): Promise<string> {
  server.keepAliveTimeout = 5_000;
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const hostPart = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return `http://${hostPart}:${addr.port}`;
}

/** The simulator's timed waits (stalls, delays, video steps), all ended at once when it closes. */
class Waits {
  private readonly pending = new Set<() => void>();

  wait(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.pending.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.pending.add(done);
    });
  }

  endAll(): void {
    for (const done of [...this.pending]) done();
  }
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const received: ReceivedRequest[] = [];
  const faults = new FaultQueue();
  const sockets = new Set<Socket>();
  const waits = new Waits();
  let n = 0;
  const state: SimState = {
    baseUrl: '',
    videoStepMs: opts.videoStepMs ?? 200,
    streamChunkDelayMs: opts.streamChunkDelayMs ?? 0,
    jobs: new Map<string, Job>(),
    nextId: (prefix: string) => `${prefix}${prefix.endsWith('-') || prefix.endsWith('_') ? '' : '_'}${String(++n).padStart(6, '0')}`,
    counter: () => ++n,
    wait: (ms: number) => waits.wait(ms),
    contextWindow: opts.contextWindow,
    maxOutput: opts.maxOutput,
  };

  const outcomes: Outcome[] = [];
  let seq = 0;

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://simulator.local');
    const { route, path } = splitRoute(url.pathname);
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    const body = await parseBody(req, raw);
    received.push({ route, method, path, headers: headersOf(req), body, at: Date.now() });
    const flavor = flavorOf(path);
    const draft = newDraft(++seq, route, path, body, raw.toString('utf8'), isStreaming(body));
    recordOnClose(draft, req, res, outcomes);
    const ctx: Ctx = { route, path, method, req, res, body, state, draft };
    const fault = faults.take(route, isStreaming(body));
    if (fault && (await applyFault(ctx, fault, flavor))) return;
    await dispatch(ctx, opts).catch((err: unknown) => answerThrown(res, flavor, err));
  }

  const server: Server = createServer((req, res) => {
    onRequest(req, res).catch(() => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500);
        res.end();
      } else res.destroy();
    });
  });
  const url = await listen(server, sockets, opts.port ?? 0, opts.host ?? '127.0.0.1');
  state.baseUrl = url;

  return {
    url,
    routeUrl: (route: string) => `${url}/r/${encodeURIComponent(route)}`,
    received,
    receivedOn: (route: string) => received.filter((r) => r.route === route),
    outcomes,
    async outcomesSettled(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (outcomes.length < received.length) {
        if (Date.now() > deadline)
          throw new Error(`simulator: ${received.length - outcomes.length} request(s) still open after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    inject: (route: string, fault: Fault) => faults.add(route, fault),
    clearFaults() {
      faults.clear();
    },
    reset() {
      received.length = 0;
      outcomes.length = 0;
      faults.clear();
      state.jobs.clear();
    },
    close() {
      waits.endAll();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        server.closeAllConnections?.();
      });
    },
  };
}
