// The standard variables as a real `npm start`-like process reads them: the SDK itself takes the service name,
// the resource attributes and the batch delay from the environment, the spans go out as JSON, and with the
// conventions' capture switch on the prompt and the answer are on the call's span (an embeddings input list too).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { type ChildGateway, startChildGateway } from '../ops/child-gateway.ts';

const PROMPT = 'Spell the word lantern-okapi-5120 backwards';

let receiver: OtlpReceiver;
let gw: ChildGateway;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  gw = await startChildGateway({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'district-gateway',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,school.district=north',
    // Far below the SDK's default of 5 s: a span that arrives within the wait below was sent on this delay.
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
  });
}, 60_000);
afterAll(async () => {
  gw?.remove();
  await receiver?.close();
});

describe('a gateway process configured by OTEL_* variables', () => {
  it('exports the call with the service name and resource attributes, and the captured prompt and answer', async () => {
    const res = await fetch(`${gw.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: PROMPT }] }),
    });
    expect(res.status).toBe(200);
    const answer = ((await res.json()) as any).choices[0].message.content as string;
    expect(answer).toContain('lantern-okapi-5120');

    const call = await receiver.waitFor((spans) => spans.find((s) => s.name === 'chat b-5'), 2_500);
    expect(receiver.exports.every((e) => e.path === '/v1/traces' && e.contentType.startsWith('application/json'))).toBe(true);
    expect(call.resource).toMatchObject({
      'service.name': 'district-gateway',
      'deployment.environment.name': 'staging',
      'school.district': 'north',
    });
    const input = JSON.parse(String(call.attributes['gen_ai.input.messages']));
    expect(input).toEqual([{ role: 'user', parts: [{ type: 'text', content: PROMPT }] }]);
    const output = JSON.parse(String(call.attributes['gen_ai.output.messages']));
    expect(output[0]).toMatchObject({ role: 'assistant', parts: [{ type: 'text', content: answer }] });
  });

  it('captures an embeddings input given as a list: each text as a message, token ids counted rather than copied', async () => {
    const embed = async (input: unknown) => {
      const res = await fetch(`${gw.base}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'embedding-c-2', input }),
      });
      expect(res.status).toBe(200);
      await res.text();
    };
    await embed([PROMPT, 'a second text']);
    await embed([[101, 2023, 102], [7592]]);
    const inputs = await receiver.waitFor((spans) => {
      const captured = spans
        .filter((s) => s.name === 'embeddings embedding-c-2')
        .map((s) => JSON.parse(String(s.attributes['gen_ai.input.messages'])) as unknown[]);
      return captured.length === 2 ? captured : undefined;
    }, 2_500);
    expect(inputs).toContainEqual([
      { role: 'user', parts: [{ type: 'text', content: PROMPT }] },
      { role: 'user', parts: [{ type: 'text', content: 'a second text' }] },
    ]);
    expect(inputs).toContainEqual([
      { role: 'user', parts: [{ type: 'token_ids', count: 3 }] },
      { role: 'user', parts: [{ type: 'token_ids', count: 1 }] },
    ]);
  });
});
