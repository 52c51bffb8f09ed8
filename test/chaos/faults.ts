// The fault table of the chaos suite: one entry per fault kind. Vendor faults go on each vendor's primary
// route (`a0`, `b0`) for about half the calls of a run, so a run mixes faulted calls, calls that fall back to
// the second route, and clean ones. Client faults change what the client does with its call.
import { request } from 'node:http';
import type { Db } from '../../engine/db/db.ts';
import type { Fault } from '../../simulator/index.ts';
import type { ChaosCall, ChaosContext, FaultCase } from './harness.ts';

/**
 * The gateway's time limit for the text doors in the chaos suite (a temp config: see chaos-gateway.ts): long enough
 * that a clean streamed call on a loaded 2-core machine ends within it (at 800 ms the control run lost calls to it).
 */
export const CHAOS_CALL_TIMEOUT_MS = 1_500;
/** A stall outlasts the gateway's time limit. */
const STALL_MS = CHAOS_CALL_TIMEOUT_MS + 1_200;

/** The fault on each vendor's primary route, for half of the run's calls to that vendor (at least one). */
function onPrimaries(fault: (times: number) => Fault, share = 0.5) {
  return (calls: readonly ChaosCall[]) =>
    (['a', 'b'] as const).flatMap((v) => {
      const n = calls.filter((c) => c.shape.vendor === v).length;
      return n === 0 ? [] : [{ route: `${v}0`, fault: fault(Math.max(1, Math.ceil(n * share))) }];
    });
}

const streaming = (s: { stream: boolean }) => s.stream;

export const VENDOR_FAULTS: readonly FaultCase[] = [
  { name: 'none (control)' },
  { name: 'vendor 429', inject: onPrimaries((times) => ({ kind: 'status', status: 429, times })) },
  { name: 'vendor 500', inject: onPrimaries((times) => ({ kind: 'status', status: 500, times })) },
  { name: 'vendor 529', inject: onPrimaries((times) => ({ kind: 'status', status: 529, times })) },
  { name: 'reset before the answer', inject: onPrimaries((times) => ({ kind: 'reset', times })) },
  { name: 'reset mid-stream', shapes: streaming, inject: onPrimaries((times) => ({ kind: 'reset-mid-stream', afterEvents: 4, times })) },
  {
    name: 'stall past the time limit (no head)',
    inject: onPrimaries((times) => ({ kind: 'stall', ms: STALL_MS, times })),
    settleMs: STALL_MS + 3_000,
  },
  {
    name: 'stall past the time limit (head sent)',
    inject: onPrimaries((times) => ({ kind: 'stall', ms: STALL_MS, headers: true, times })),
    settleMs: STALL_MS + 3_000,
  },
  {
    name: 'stall mid-stream',
    shapes: streaming,
    inject: onPrimaries((times) => ({ kind: 'stall', ms: STALL_MS, afterEvents: 4, times })),
    settleMs: STALL_MS + 3_000,
  },
  { name: 'malformed JSON', shapes: (s) => !s.stream, inject: onPrimaries((times) => ({ kind: 'malformed-json', times })) },
  { name: 'malformed SSE', shapes: streaming, inject: onPrimaries((times) => ({ kind: 'malformed-sse', afterEvents: 3, times })) },
  { name: 'usage missing (streams)', shapes: streaming, inject: onPrimaries((times) => ({ kind: 'usage-missing', times })) },
  { name: 'usage missing (plain answers)', shapes: (s) => !s.stream, inject: onPrimaries((times) => ({ kind: 'usage-missing', times })) },
  { name: 'usage above the reservation', inject: onPrimaries((times) => ({ kind: 'usage-inflated', factor: 1000, times })) },
];

/**
 * Sends the call on its own socket and resets it (as a killed client's is) once `cutWhen` is true of what has
 * arrived; resolves when the socket is closed, whatever happened.
 */
export function callAndCut(call: ChaosCall, cutWhen: (received: string) => boolean): Promise<void> {
  return new Promise((resolve) => {
    let text = '';
    const req = request(new URL(call.path, call.url), { method: 'POST', agent: false, headers: call.headers }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (cutWhen(text)) req.socket?.resetAndDestroy();
      });
      res.on('error', () => undefined);
    });
    req.on('close', () => resolve());
    req.on('error', () => undefined);
    req.end(JSON.stringify(call.body));
  });
}

/** Leaves once the vendor has the request and before it answers (the vendor is slowed for that). */
async function leaveBeforeTheAnswer(call: ChaosCall, ctx: ChaosContext): Promise<void> {
  const ac = new AbortController();
  const pending = fetch(call.url + call.path, { method: 'POST', headers: call.headers, body: JSON.stringify(call.body), signal: ac.signal })
    .then((res) => res.arrayBuffer())
    .catch(() => undefined);
  const tagged = `[[sim:call=${call.tag}]]`;
  // Only the requests that came in since this call began: the suite's earlier thousands cannot hold it.
  const received = ctx.t.sim.received;
  let from = received.length;
  const seen = () => {
    for (; from < received.length; from++) if (JSON.stringify(received[from]!.body ?? '').includes(tagged)) return true;
    return false;
  };
  for (let i = 0; i < 200 && !seen(); i++) await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  await pending;
}

const dataFrames = (text: string) => text.split('\ndata: ').length - 1 + (text.startsWith('data: ') ? 1 : 0);

/**
 * Starts a multipart video request with a 1 MB starting image, sends half of the body and resets the socket:
 * a client that dies mid-upload. The prompt carries the call's tag, so a vendor request would be seen.
 */
function leaveDuringVideoUpload(call: ChaosCall): Promise<void> {
  const boundary = `chaos${call.tag}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nvideo-d-1\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nchaos upload [[sim:call=${call.tag}]]\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="input_reference"; filename="start.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const image = Buffer.alloc(1024 * 1024, 7);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve) => {
    const req = request(new URL('/v1/videos', call.url), {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${call.apiKey}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + image.length + tail.length),
      },
    });
    req.on('close', () => resolve());
    req.on('error', () => undefined);
    req.write(head);
    req.write(image.subarray(0, image.length / 2), () => setTimeout(() => req.socket?.resetAndDestroy(), 10));
  });
}

/** A video job stored for an upload that never finished would be a job the client cannot have asked for. */
async function noVideoJobs(ctx: { db: Db }, calls: readonly ChaosCall[]): Promise<string[]> {
  const wallets = [...new Set(calls.map((c) => c.walletId))];
  const r = await ctx.db.query<{ n: string }>(`SELECT count(*) AS n FROM video_jobs WHERE wallet_id = ANY($1)`, [wallets]);
  const n = Number(r.rows[0]!.n);
  return n === 0 ? [] : [`${n} video job(s) stored for uploads the client broke off`];
}

export const CLIENT_FAULTS: readonly FaultCase[] = [
  { name: 'client leaves during a video upload', client: leaveDuringVideoUpload, check: noVideoJobs },
  {
    name: 'client leaves before the vendor answers',
    inject: (calls) =>
      (['a0', 'b0', 'a1', 'b1'] as const).map((route) => ({ route, fault: { kind: 'delay', ms: 150, times: calls.length } as Fault })),
    client: leaveBeforeTheAnswer,
  },
  { name: 'client leaves mid-stream', shapes: streaming, client: (c) => callAndCut(c, (t) => dataFrames(t) >= 3) },
  {
    name: 'client leaves right after the last content frame',
    shapes: streaming,
    client: (c) => callAndCut(c, (t) => t.includes(c.shape.lastContent!)),
  },
];
