// With telemetry on, a call's usage record carries its trace id (the client's trace, continued from its
// traceparent), so the record, the log line and the exported trace join; with it off, the record says null.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver.ts';

let receiver: OtlpReceiver;
let traced: TestGateway;
let plain: TestGateway;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  traced = await startTestGateway({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' } });
  plain = await startTestGateway();
});
afterAll(async () => {
  await traced?.close();
  await plain?.close();
  await receiver?.close();
});

async function recordOfCall(t: TestGateway, headers: Record<string, string> = {}) {
  const res = await post(
    t,
    '/v1/chat/completions',
    { model: 'b-5', messages: [{ role: 'user', content: 'hi [[sim:usage input=10 output=5]]' }], max_completion_tokens: 50 },
    headers,
  );
  expect(res.status).toBe(200);
  await res.json();
  for (let i = 0; i < 100 && (await t.held()) !== 0n; i++) await sleep(20);
  const id = res.headers.get('x-request-id')!;
  const g = await fetch(`${t.url}/v1/generations/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${t.apiKey}` } });
  return g.json();
}

describe('trace id on usage records', () => {
  it('telemetry on: the record carries the trace the client began', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const record = await recordOfCall(traced, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    expect(record.trace_id).toBe(traceId);
  });

  it('telemetry off: null', async () => {
    expect((await recordOfCall(plain)).trace_id).toBeNull();
  });
});
