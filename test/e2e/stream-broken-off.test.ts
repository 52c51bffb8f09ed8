// A vendor stream cut off after the first byte reached the client (its socket reset, or stalled and closed) ends the
// client's stream with an error in the door's own shape, through the official SDKs: an attack found the OpenAI SDK
// finishing such a chat or responses stream without an error, its client holding three words for the whole answer,
// and the Anthropic SDK saying only "stream ended without producing a Message". The call is still charged for what
// the vendor produced, once.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { anthropic, openai } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ simulator: { streamChunkDelayMs: 5 } });
});
afterAll(() => t?.close());

const LONG = 'Tell me a story [[sim:long=40]]';

/**
 * Runs `read` with the vendor's first route cutting its stream after `afterEvents` events, once text has reached
 * the client (before it, the stream's opening is held and the call falls back: test/e2e/fallback.test.ts).
 */
async function cutOff<T>(route: string, read: () => Promise<T>, afterEvents = 4): Promise<{ error: unknown; charged: bigint }> {
  const before = await t.balance();
  t.sim.inject(route, { kind: 'reset-mid-stream', afterEvents });
  let error: unknown = null;
  try {
    await read();
  } catch (e) {
    error = e;
  }
  return { error, charged: before - (await t.balance()) };
}

describe('a vendor stream cut off mid-answer reaches the SDK as an error', () => {
  it('chat completions, vendor B, OpenAI SDK: an APIError, and the part produced charged', async () => {
    let text = '';
    const { error, charged } = await cutOff('b0', async () => {
      const stream = await openai(t).chat.completions.create({ model: 'b-5', messages: [{ role: 'user', content: LONG }], stream: true });
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    });
    expect(text.length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String((error as Error).message)).toContain('broke off the stream');
    expect(charged).toBeGreaterThan(0n);
  });

  it('responses, OpenAI SDK: an APIError', async () => {
    const { error, charged } = await cutOff(
      'b0',
      async () => {
        const stream = await openai(t).responses.create({ model: 'b-5', input: LONG, stream: true });
        for await (const _ of stream) {
          // read to the end
        }
      },
      6,
    ); // its four opening events, then two of text
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(charged).toBeGreaterThan(0n);
  });

  it('messages, vendor A, Anthropic SDK: an APIError of type api_error (upstream), not a stream without its message', async () => {
    const { error, charged } = await cutOff('a0', async () => {
      const stream = anthropic(t).messages.stream({ model: 'a-mid-4.5', max_tokens: 500, messages: [{ role: 'user', content: LONG }] });
      await stream.finalMessage();
    });
    expect((error as Error).message).toContain('broke off the stream');
    expect((error as Error).message).not.toContain('stream ended without producing');
    expect(charged).toBeGreaterThan(0n);
  });
});
