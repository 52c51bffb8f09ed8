// A webhook receiver of the tests' own: node http on loopback, recording every delivery (headers and raw body)
// and answering with the statuses a test lines up (then 200).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Statuses answered to the next deliveries, in order; 200 once they run out. */
  answers: number[];
  /** Resolves once at least `n` deliveries arrived (or rejects after `ms`). */
  waitFor(n: number, ms?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const answers: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: any = null;
      try {
        json = JSON.parse(body);
      } catch {
        json = null;
      }
      received.push({ headers: req.headers, body, json });
      const status = answers.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : `failing on purpose ${'x'.repeat(2000)}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    answers,
    async waitFor(n, ms = 15_000) {
      const until = Date.now() + ms;
      while (received.length < n) {
        if (Date.now() > until) throw new Error(`expected ${n} deliveries, got ${received.length}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      return received;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Management-key calls on a gateway's alert doors. */
export function doors(base: string, managementKey: string) {
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${managementKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? null : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  return {
    send,
    createWebhook: (body: unknown) => send('POST', '/v1/webhooks', body),
    setAlerts: (body: unknown) => send('PATCH', '/v1/alerts', body),
    deliveries: (id: string) => send('GET', `/v1/webhooks/${id}/deliveries`),
    replay: (id: string, eventId: string) => send('POST', `/v1/webhooks/${id}/events/${eventId}/replay`),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Everything charged has been checked for crossings, and every queued delivery sent. */
export async function alertsSettled(t: {
  gw: { alerts: { watcher: { idle(): Promise<void> }; worker: { settled(): Promise<void> } } };
}): Promise<void> {
  await sleep(100);
  await t.gw.alerts.watcher.idle();
  await t.gw.alerts.worker.settled();
  await sleep(300);
  await t.gw.alerts.worker.settled();
}
