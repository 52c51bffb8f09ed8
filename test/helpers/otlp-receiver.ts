// A collector of the test's own: an HTTP server taking OTLP/HTTP trace exports on POST /v1/traces, keeping every
// body as it arrived and, for the JSON encoding, the spans flattened with their resource, so a test reads what a
// collector, Jaeger or Tempo would have been sent.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type AttributeValue = string | number | boolean | AttributeValue[] | null;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's numbering: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  /** 2 is an error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  /** The base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  /** Every export request: its path, content-type and raw body. */
  exports: { path: string; contentType: string; body: Buffer }[];
  spans(): ReceivedSpan[];
  /** Every byte exported, as text: where a test looks for what must never leave. */
  allText(): string;
  /** Resolves with the spans once `pick` finds what it needs among them, or rejects after `ms`. */
  waitFor<T>(pick: (spans: ReceivedSpan[]) => T | undefined, ms?: number): Promise<T>;
  close(): Promise<void>;
}

type OtlpValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
};
type OtlpAttribute = { key: string; value: OtlpValue };

const attributeValue = (v: OtlpValue): AttributeValue => {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(attributeValue);
  return null;
};
const attributesOf = (list: OtlpAttribute[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, attributeValue(a.value)]));

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: OtlpReceiver['exports'] = [];
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers['content-type'] ?? '');
      exports.push({ path: req.url ?? '', contentType, body });
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (contentType.startsWith('application/json')) spans.push(...flatten(JSON.parse(body.toString('utf8'))));
      res.writeHead(200, { 'content-type': contentType || 'application/json' }).end(contentType.startsWith('application/json') ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    exports,
    spans: () => spans,
    allText: () => exports.map((e) => e.body.toString('utf8')).join('\n'),
    async waitFor(pick, ms = 10_000) {
      const until = Date.now() + ms;
      for (;;) {
        const found = pick(spans);
        if (found !== undefined) return found;
        if (Date.now() > until)
          throw new Error(
            `the receiver did not get the spans looked for within ${ms} ms (it has ${spans.length}: ${spans.map((s) => s.name).join(', ')})`,
          );
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function flatten(body: {
  resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
}): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: String(s.traceId),
          spanId: String(s.spanId),
          parentSpanId: String(s.parentSpanId ?? ''),
          name: String(s.name),
          kind: Number(s.kind),
          attributes: attributesOf(s.attributes as OtlpAttribute[]),
          events: ((s.events as { name: string; attributes?: OtlpAttribute[] }[]) ?? []).map((e) => ({
            name: e.name,
            attributes: attributesOf(e.attributes),
          })),
          statusCode: Number((s.status as { code?: number } | undefined)?.code ?? 0),
          resource,
        });
      }
    }
  }
  return out;
}
