// Traces over real HTTP: the gateway on loopback against the bundled simulator, exporting OTLP/HTTP (JSON) to a
// receiver of the test's own. A client's traceparent continues its trace through the call's span, its children
// (admission, each route attempt, the settle) and into the vendor's request; the span carries the GenAI
// attributes, the vendor's exact token counts and the charge; no prompt or answer text leaves by default.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp-receiver.ts';

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

/** Words no answer or header would carry unless the prompt itself was exported. */
const PROMPT = 'Recite the saffron-walrus-7731 password';

let receiver: OtlpReceiver;
let t: TestGateway;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  t = await startTestGateway({
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', GATEWAY_VIDEO_POLL_MS: '25' },
    simulator: { videoStepMs: 100 },
    logger: { level: 'info', stream: { write: (line) => logLines.push(JSON.parse(line)) } },
  });
});
afterEach(() => t.sim.clearFaults());
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

/** A client's own trace: the traceparent it sends and the ids in it. */
function clientTrace() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, headers: { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'school=north' } };
}

/** Flushes the gateway's spans until `pick` finds what it needs in what the receiver got. */
async function exported<T>(pick: (spans: ReceivedSpan[]) => T | undefined): Promise<T> {
  return receiver.waitFor((spans) => {
    void t.gw.telemetry!.flush();
    return pick(spans);
  });
}

/** The call's span and its children, once the call's span (which ends last) has arrived. */
async function callTrace(traceId: string, callName: string) {
  return exported((spans) => {
    const inTrace = spans.filter((s) => s.traceId === traceId);
    const call = inTrace.find((s) => s.kind === SERVER && s.name === callName);
    return call && { call, children: inTrace.filter((s) => s.parentSpanId === call.spanId) };
  });
}

const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe('a chat call, not streamed', () => {
  it('continues the client trace with the GenAI attributes, the exact tokens and the charge, and the vendor gets traceparent', async () => {
    const client = clientTrace();
    const res = await post(
      t,
      '/v1/chat/completions',
      { model: 'b-5', max_completion_tokens: 200, messages: [{ role: 'user', content: PROMPT }] },
      { ...client.headers, 'x-request-id': 'req-trace-1' },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('req-trace-1');
    const body = (await res.json()) as any;
    const charged = Number(res.headers.get('x-service-charged-nano'));
    expect(charged).toBeGreaterThan(0);

    const { call, children } = await callTrace(client.traceId, 'chat b-5');
    expect(call.parentSpanId).toBe(client.spanId);
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'b',
      'gen_ai.request.model': 'b-5',
      'gen_ai.request.max_tokens': 200,
      'gen_ai.response.model': body.model,
      'gen_ai.response.id': body.id,
      'gen_ai.response.finish_reasons': [body.choices[0].finish_reason],
      'gen_ai.usage.input_tokens': body.usage.prompt_tokens,
      'gen_ai.usage.output_tokens': body.usage.completion_tokens,
      'gen_ai.usage.cost.amount': charged / 1e9,
      'gen_ai.usage.cost.currency': 'USD',
      'gateway.charge.nano_usd': charged,
      'gateway.door': 'chat',
      'gateway.route': 'b0',
      'gateway.fallback_depth': 0,
      'gateway.wallet_id': t.walletId,
      'gateway.request_id': 'req-trace-1',
      'http.response.status_code': 200,
    });
    // The simulator's own record of what it reported (its input bucket leaves cache tokens out, as the gateway's does).
    const outcome = t.sim.outcomes.filter((o) => o.route === 'b0').at(-1)!;
    expect(call.attributes['gen_ai.usage.input_tokens']).toBe(
      outcome.usage!.input + outcome.usage!.cache_read + outcome.usage!.cache_write,
    );
    expect(call.attributes['gen_ai.usage.output_tokens']).toBe(outcome.usage!.output);
    const prefix = String(call.attributes['gateway.key_prefix']);
    expect(t.apiKey.startsWith(prefix.replace(/…$/, ''))).toBe(true);
    expect(prefix.length).toBeLessThan(t.apiKey.length);
    expect(call.statusCode).not.toBe(ERROR);

    expect(children.map((s) => s.name).sort()).toEqual(['admission', 'attempt b0', 'settle']);
    const attempt = named(children, 'attempt b0')[0]!;
    expect(attempt.kind).toBe(CLIENT);
    expect(attempt.attributes['http.response.status_code']).toBe(200);
    const vendorCall = t.received('b').at(-1)!;
    expect(vendorCall.headers.traceparent).toBe(`00-${client.traceId}-${attempt.spanId}-01`);
    expect(vendorCall.headers.tracestate).toBe('school=north');

    const exportedText = receiver.allText();
    expect(exportedText).not.toContain('saffron-walrus-7731');
    expect(exportedText).not.toContain(t.apiKey);
    expect(exportedText).not.toContain('gen_ai.input.messages');

    const line = logLines.find((l) => l.msg === 'call completed' && l.traceId === client.traceId);
    expect(line).toMatchObject({ requestId: 'req-trace-1', model: 'b-5' });
  });
});

describe('a chat call, streamed', () => {
  it('records the time to first chunk, the finish reason and the tokens the vendor streamed', async () => {
    const client = clientTrace();
    const res = await post(
      t,
      '/v1/chat/completions',
      { model: 'a-top-5.5', stream: true, messages: [{ role: 'user', content: PROMPT }] },
      client.headers,
    );
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('data: [DONE]');

    const { call, children } = await callTrace(client.traceId, 'chat a-top-5.5');
    const outcome = t.sim.outcomes.filter((o) => o.route === 'a0').at(-1)!;
    expect(outcome.streaming).toBe(true);
    expect(call.attributes).toMatchObject({
      'gen_ai.request.stream': true,
      'gen_ai.provider.name': 'a',
      'gen_ai.usage.input_tokens': outcome.usage!.input + outcome.usage!.cache_read + outcome.usage!.cache_write,
      'gen_ai.usage.output_tokens': outcome.usage!.output,
      'gen_ai.response.finish_reasons': ['end_turn'],
    });
    expect(String(call.attributes['gen_ai.response.id'])).not.toBe('');
    expect(call.attributes['gen_ai.response.time_to_first_chunk']).toBeGreaterThan(0);
    expect(call.events.map((e) => e.name)).toContain('first chunk');
    expect(children.map((s) => s.name).sort()).toEqual(['admission', 'attempt a0', 'settle']);
    expect(t.received('a').at(-1)!.headers.traceparent).toBe(`00-${client.traceId}-${named(children, 'attempt a0')[0]!.spanId}-01`);
    expect(receiver.allText()).not.toContain('saffron-walrus-7731');
  });
});

describe('every door', () => {
  const A_VERSION = { 'anthropic-version': '2023-06-01' };
  const doors = [
    {
      path: '/v1/messages',
      body: { model: 'a-top-5.5', max_tokens: 64, messages: [{ role: 'user', content: PROMPT }] },
      span: 'chat a-top-5.5',
      door: 'messages',
      headers: A_VERSION,
    },
    { path: '/v1/responses', body: { model: 'b-5', input: PROMPT }, span: 'chat b-5', door: 'responses' },
    { path: '/v1/embeddings', body: { model: 'embedding-c-2', input: [PROMPT] }, span: 'embeddings embedding-c-2', door: 'embeddings' },
    {
      path: '/v1/images/generations',
      body: { model: 'image-b-1', prompt: PROMPT, size: '1024x1024' },
      span: 'generate_content image-b-1',
      door: 'images',
    },
    {
      path: '/v1/audio/speech',
      body: { model: 'tts-1-hd', input: PROMPT, voice: 'alloy' },
      span: 'generate_content tts-1-hd',
      door: 'speech',
    },
    {
      path: '/v1/moderations',
      body: { model: 'omni-moderation-latest', input: PROMPT },
      span: 'generate_content omni-moderation-latest',
      door: 'moderations',
    },
  ];
  for (const d of doors) {
    it(`${d.path}: the call's span, its attempt, and the traceparent the vendor got`, async () => {
      const client = clientTrace();
      const res = await post(t, d.path, d.body, { ...client.headers, ...d.headers });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const { call, children } = await callTrace(client.traceId, d.span);
      expect(call.attributes['gateway.door']).toBe(d.door);
      expect(call.attributes['http.response.status_code']).toBe(200);
      const attempt = children.find((s) => s.name.startsWith('attempt'))!;
      const model = d.body.model;
      const vendorCall = t.sim.received.filter((r) => (r.body as { model?: string } | undefined)?.model === model).at(-1)!;
      expect(vendorCall.headers.traceparent).toBe(`00-${client.traceId}-${attempt.spanId}-01`);
      expect(receiver.allText()).not.toContain('saffron-walrus-7731');
    });
  }
});

describe('a fallback', () => {
  it('is two route-attempt spans, the first failed with its status, and the call answered at depth 1', async () => {
    const client = clientTrace();
    t.sim.inject('b0', { kind: 'status', status: 503 });
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: 'hello' }] }, client.headers);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    await res.json();

    const { call, children } = await callTrace(client.traceId, 'chat b-5');
    const [first, second] = [named(children, 'attempt b0')[0], named(children, 'attempt b1')[0]];
    expect(first!.attributes).toMatchObject({
      'http.response.status_code': 503,
      'gateway.retry_reason': 'answered 503',
      'error.type': '503',
      'gateway.attempt': 0,
    });
    expect(first!.statusCode).toBe(ERROR);
    expect(second!.attributes).toMatchObject({ 'http.response.status_code': 200, 'gateway.attempt': 1 });
    expect(second!.statusCode).not.toBe(ERROR);
    expect(call.attributes).toMatchObject({ 'gateway.route': 'b1', 'gateway.fallback_depth': 1 });
    // Each attempt's own span is the parent the vendor's route was given.
    const [onB0, onB1] = [
      t
        .received('b')
        .filter((r) => r.route === 'b0')
        .at(-1)!,
      t
        .received('b')
        .filter((r) => r.route === 'b1')
        .at(-1)!,
    ];
    expect(onB0.headers.traceparent).toBe(`00-${client.traceId}-${first!.spanId}-01`);
    expect(onB1.headers.traceparent).toBe(`00-${client.traceId}-${second!.spanId}-01`);
  });
});

describe('a refused call', () => {
  it('402: a span with the error type, its admission failed, and no vendor attempt', async () => {
    const poor = await t.gw.ledger.createWallet({ credits: 1 });
    const { key } = await t.gw.keys.createApiKey(poor.id, { name: 'poor' });
    const client = clientTrace();
    const before = t.sim.received.length;
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...client.headers },
      body: JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: PROMPT }] }),
    });
    expect(res.status).toBe(402);
    const { call, children } = await callTrace(client.traceId, 'chat b-5');
    expect(call.attributes).toMatchObject({
      'error.type': 'insufficient_credit',
      'http.response.status_code': 402,
      'gateway.wallet_id': poor.id,
    });
    expect(call.statusCode).toBe(ERROR);
    expect(children.map((s) => s.name)).toEqual(['admission']);
    expect(children[0]!.attributes['error.type']).toBe('insufficient_credit');
    expect(receiver.spans().filter((s) => s.traceId === client.traceId && s.name.startsWith('attempt'))).toEqual([]);
    expect(t.sim.received.length).toBe(before);
    expect(call.attributes['gateway.charge.nano_usd']).toBeUndefined();
  });
});

describe('a video job', () => {
  it('its request, its create attempt (traceparent to the vendor) and its settle with the charge are one trace', async () => {
    const client = clientTrace();
    const res = await post(
      t,
      '/v1/videos',
      { model: 'video-d-1', prompt: `${PROMPT} [[sim:cost=0.123]]`, seconds: '4', size: '1280x720' },
      client.headers,
    );
    expect(res.status).toBe(200);
    const video = (await res.json()) as any;
    for (let i = 0; ; i++) {
      const job = (await (
        await fetch(`${t.url}/v1/videos/${video.id}`, { headers: { authorization: `Bearer ${t.apiKey}` } })
      ).json()) as any;
      if (job.status === 'completed') break;
      if (i > 400) throw new Error(`video still ${job.status}`);
      await sleep(20);
    }
    const { call, children } = await exported((spans) => {
      const inTrace = spans.filter((s) => s.traceId === client.traceId);
      const call = inTrace.find((s) => s.kind === SERVER);
      const children = call ? inTrace.filter((s) => s.parentSpanId === call.spanId) : [];
      return children.some((s) => s.name === 'settle') ? { call: call!, children } : undefined;
    });
    expect(call.name).toBe('generate_content video-d-1');
    expect(call.parentSpanId).toBe(client.spanId);
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': 'generate_content',
      'gen_ai.request.model': 'video-d-1',
      'gateway.video.id': video.id,
      'gateway.door': 'videos',
    });
    expect(children.map((s) => s.name).sort()).toEqual(['admission', 'attempt d0', 'settle']);
    const settle = named(children, 'settle')[0]!;
    expect(settle.attributes).toMatchObject({
      'gateway.charge.nano_usd': 123_000_000,
      'gen_ai.usage.cost.amount': 0.123,
      'gateway.video.status': 'completed',
      'gateway.video.seconds': 4,
    });
    const create = t
      .received('d')
      .filter((r) => r.path === '/v1/videos/generations')
      .at(-1)!;
    expect(create.headers.traceparent).toBe(`00-${client.traceId}-${named(children, 'attempt d0')[0]!.spanId}-01`);
    expect(receiver.allText()).not.toContain('saffron-walrus-7731');
  });
});

describe('a client trace not sampled', () => {
  it('exports nothing of the call (the default sampler follows the parent) yet still passes the trace on to the vendor', async () => {
    const client = clientTrace();
    const unsampled = { traceparent: `00-${client.traceId}-${client.spanId}-00` };
    const res = await post(t, '/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: 'quiet' }] }, unsampled);
    expect(res.status).toBe(200);
    await res.json();
    expect(t.received('b').at(-1)!.headers.traceparent).toMatch(new RegExp(`^00-${client.traceId}-[0-9a-f]{16}-00$`));
    // A sampled call after it: once its span is in, the unsampled one would have been too.
    const later = clientTrace();
    await (await post(t, '/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: 'loud' }] }, later.headers)).json();
    await callTrace(later.traceId, 'chat b-5');
    await t.gw.telemetry!.flush();
    expect(receiver.spans().filter((s) => s.traceId === client.traceId)).toEqual([]);
  });
});
