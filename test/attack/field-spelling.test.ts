// Field names in another case or compatibility form (found by this session's attack helper). The gateway reads
// `n`, `max_tokens`, `stream` … by their exact spelling and passed `N`, `MAX_TOKENS` or `ſtream` (a long s) on as
// they were. A vendor whose JSON decoder matches names regardless of case and compatibility form (Go's, the last
// key winning) reads them as the fields they fold to: eight answers or 100,000 tokens against a hold for one
// answer of 10, or a stream the gateway reads as a whole answer and cannot charge. Every vendor format spells
// its fields in lowercase, so any other spelling is refused before any hold or vendor call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNG_1X1_BASE64 } from '../../simulator/media.ts';
import { A_VERSION, expectInvalid, post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const ask = { model: 'e-open-8b', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

async function refusedUnsent(res: Promise<Response>, shape: 'chat' | 'messages' = 'chat'): Promise<any> {
  const sent = t.sim.received.length;
  const before = await t.balance();
  const body = await expectInvalid(await res, shape);
  expect(t.sim.received.length).toBe(sent);
  expect(await t.balance()).toBe(before);
  return body;
}

describe('a field spelled in another case or form is refused, naming the spelling to send', () => {
  for (const [key, value, plain] of [
    ['N', 8, 'n'],
    ['MAX_TOKENS', 100_000, 'max_tokens'],
    ['Max_Completion_Tokens', 100_000, 'max_completion_tokens'],
    ['\u017Ftream', true, 'stream'], // ſ, the long s
    ['max_to\u212Aens', 100_000, 'max_tokens'], // K, the Kelvin sign
  ] as const) {
    it(`chat: ${JSON.stringify(key)}`, async () => {
      const body = await refusedUnsent(post(t, '/v1/chat/completions', { ...ask, [key]: value }));
      expect(body.error.message).toContain(`send '${plain}'`);
      expect(body.error.param).toBe(key);
    });
  }

  it('messages, in its own shape: Max_Tokens', async () => {
    const body = await refusedUnsent(
      post(t, '/v1/messages', { model: 'a-small-4.5', max_tokens: 16, Max_Tokens: 4096, messages: ask.messages }, A_VERSION),
      'messages',
    );
    expect(body.error.message).toContain("send 'max_tokens'");
  });

  it('responses: MAX_TOOL_CALLS', async () => {
    await refusedUnsent(post(t, '/v1/responses', { model: 'b-5', input: 'hi', max_output_tokens: 16, MAX_TOOL_CALLS: 50 }));
  });

  it('speech: Input beside input (charged for the characters of one only)', async () => {
    await refusedUnsent(post(t, '/v1/audio/speech', { model: 'tts-1', voice: 'alloy', input: 'Hi', Input: 'x'.repeat(3000) }));
  });

  it('image edits, a form: N', async () => {
    const fd = new FormData();
    fd.append('model', 'image-b-1');
    fd.append('prompt', 'add a hat');
    fd.append('N', '3');
    fd.append('image', new Blob([new Uint8Array(Buffer.from(PNG_1X1_BASE64, 'base64'))], { type: 'image/png' }), 'in.png');
    await refusedUnsent(fetch(`${t.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: fd }));
  });

  // Content parts sit in more places than a message's content: a function call's output given as parts, and a
  // tool result's own content. A vendor reads an image there as anywhere, so `TYPE` there is refused too.
  it("responses: TYPE in a function call's output parts", async () => {
    const output = [{ TYPE: 'input_image', image_url: `data:image/png;base64,${PNG_1X1_BASE64}` }];
    const input = [
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output },
    ];
    const body = await refusedUnsent(post(t, '/v1/responses', { model: 'b-5', input, max_output_tokens: 16 }));
    expect(body.error.param).toBe('input[1].output[0].TYPE');
  });

  it("messages: Type in a tool result's own content", async () => {
    const image = { Type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1X1_BASE64 } };
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [image] }] },
    ];
    const body = await refusedUnsent(post(t, '/v1/messages', { model: 'a-small-4.5', max_tokens: 16, messages }, A_VERSION), 'messages');
    expect(body.error.message).toContain("send 'messages[2].content[0].content[0].type'");
  });

  it('control: the lowercase call is served', async () => {
    const res = await post(t, '/v1/chat/completions', ask);
    expect(res.status, await res.text()).toBe(200);
  });
});
