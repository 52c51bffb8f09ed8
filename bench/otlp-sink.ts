// A local OTLP/HTTP receiver for the bench with telemetry on: takes every trace export on POST /v1/traces,
// answers at once and keeps nothing but counts, so the run measures the gateway's cost of exporting and not a
// collector's. `node --import tsx bench/otlp-sink.ts` (OTLP_SINK_PORT, default 4318), then
// `OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 npm run bench`; on SIGINT or SIGTERM it prints what it took.
import { createServer } from 'node:http';

let requests = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
    requests++;
    // An empty body is a complete ExportTraceServiceResponse in both encodings (no partial success to report).
    const json = String(req.headers['content-type'] ?? '').startsWith('application/json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
  });
});
server.listen(Number(process.env.OTLP_SINK_PORT ?? 4318), '127.0.0.1', () => {
  console.log(`otlp sink on http://127.0.0.1:${(server.address() as { port: number }).port}`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    console.log(`otlp sink: ${requests} exports, ${bytes} bytes`);
    server.close(() => process.exit(0));
  });
}
