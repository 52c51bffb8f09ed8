// The load generator, run as its own process (bench/load-client.ts starts it once per run) so its CPU is never
// counted as the gateway's. It reads LoadSpecs as JSON lines on stdin and answers each with a LoadResult line.
//
//   closed: `connections` workers each send a request, read the whole answer, send the next, until `seconds`
//           have passed (requests cycle through `requests`, so 100 keys spread the load over 100 wallets);
//   burst:  `count` requests at once on as many connections, and the wall time until the last one ends.
//
// An answer counts only when its status is 200 and, for a stream, its text ends the way that stream must end
// (`[DONE]`, `message_stop`); anything else is an error, with the first few kept as samples.
import { Pool } from 'undici';

export interface LoadRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** For streams: what the end of a complete answer contains. */
  endsWith?: string;
}

export interface LoadSpec {
  url: string;
  mode: 'closed' | 'burst';
  requests: LoadRequest[];
  connections: number;
  seconds?: number | undefined;
  count?: number;
}

export interface Quantiles {
  p50: number;
  p99: number;
}

export interface LoadResult {
  ok: number;
  errors: number;
  errorSamples: string[];
  seconds: number;
  perSecond: number;
  latencyMs: Quantiles;
  /** Time to the first byte of the body, for streams. */
  ttfbMs?: Quantiles;
  wallMs: number;
  /** CPU seconds (user + system) this load process spent inside the window. */
  cpuSeconds: number;
}

const quantiles = (xs: number[]): Quantiles => {
  xs.sort((a, b) => a - b);
  const at = (q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99) };
};

async function run(spec: LoadSpec): Promise<LoadResult> {
  const pool = new Pool(spec.url, {
    connections: spec.connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
  });
  const latencies: number[] = [];
  const ttfbs: number[] = [];
  const errorSamples: string[] = [];
  let errors = 0;
  let next = 0;
  const streaming = spec.requests.some((r) => r.endsWith);

  const once = async (): Promise<void> => {
    const r = spec.requests[next++ % spec.requests.length]!;
    const t0 = performance.now();
    let firstByte = NaN;
    let tail = '';
    let status = 0;
    try {
      const res = await pool.request({ method: 'POST', path: r.path, headers: r.headers, body: r.body });
      status = res.statusCode;
      for await (const chunk of res.body) {
        if (Number.isNaN(firstByte)) firstByte = performance.now();
        tail = (tail + (chunk as Buffer).toString('utf8')).slice(-256);
      }
    } catch (e) {
      tail = `transport: ${(e as Error).message}`;
    }
    const done = performance.now();
    if (status === 200 && (!r.endsWith || tail.includes(r.endsWith))) {
      latencies.push(done - t0);
      if (r.endsWith) ttfbs.push(firstByte - t0);
    } else {
      errors++;
      if (errorSamples.length < 3) errorSamples.push(`${status} ${r.path}: ${tail.slice(-200)}`);
    }
  };

  const cpu0 = process.cpuUsage();
  const started = performance.now();
  if (spec.mode === 'burst') {
    await Promise.all(Array.from({ length: spec.count ?? spec.connections }, once));
  } else {
    const until = started + (spec.seconds ?? 5) * 1000;
    const worker = async () => {
      while (performance.now() < until) await once();
    };
    await Promise.all(Array.from({ length: spec.connections }, worker));
  }
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpu0);
  await pool.close();
  return {
    ok: latencies.length,
    errors,
    errorSamples,
    seconds: wallMs / 1000,
    perSecond: latencies.length / (wallMs / 1000),
    latencyMs: quantiles(latencies),
    ...(streaming ? { ttfbMs: quantiles(ttfbs) } : {}),
    wallMs,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
}

// Serves specs one line at a time on stdin, one result line each on stdout, until stdin ends: one process for
// the whole run, so no row pays for starting it.
if (import.meta.url === `file://${process.argv[1]}`) {
  let buffered = '';
  let queue = Promise.resolve();
  process.stdin.on('data', (d: Buffer) => {
    buffered += d.toString('utf8');
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (!line.trim()) continue;
      queue = queue.then(async () => {
        const result = await run(JSON.parse(line) as LoadSpec).catch((e: Error) => ({ failed: e.stack ?? String(e) }));
        process.stdout.write(`${JSON.stringify(result)}\n`);
      });
    }
  });
  process.stdin.on('end', () => void queue.then(() => process.exit(0)));
}
