// The default encoding: with only OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, spans go to that address as OTLP
// protobuf (http/protobuf, the specification's default), carrying the call's span name and not its prompt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver.ts';

let receiver: OtlpReceiver;
let t: TestGateway;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  t = await startTestGateway({ env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces` } });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('http/protobuf by default', () => {
  it('posts protobuf to the traces endpoint', async () => {
    const res = await post(t, '/v1/chat/completions', {
      model: 'b-5',
      messages: [{ role: 'user', content: 'the cobalt-heron-4410 riddle' }],
    });
    expect(res.status).toBe(200);
    await res.json();
    await receiver.waitFor(() => {
      void t.gw.telemetry!.flush();
      return receiver.exports.find((e) => e.body.includes('chat b-5'));
    });
    expect(receiver.exports.map((e) => [e.path, e.contentType])).toContainEqual(['/v1/traces', 'application/x-protobuf']);
    // Protobuf keeps strings as their UTF-8 bytes: a prompt exported would be found as text.
    expect(receiver.allText()).toContain('gen_ai.usage.output_tokens');
    expect(receiver.allText()).not.toContain('cobalt-heron-4410');
  });
});
