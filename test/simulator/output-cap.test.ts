// With no output limit sent, the simulated vendors stop at the model's most output, as the real ones do: the
// answer ends as that format ends a length-capped one and the usage reports the most, never more.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../simulator/index.ts';

const MOST = 50;
const mostOf: Record<string, number> = { 'b-capped': MOST };

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ maxOutput: (model) => mostOf[model] });
});
afterAll(() => sim.close());

const openai = () => new OpenAI({ apiKey: 'sk-b', baseURL: `${sim.routeUrl('b1')}/v1`, maxRetries: 0 });
const LONG = 'x [[sim:long=2000]]';

/** The outcome record of the latest request: what the simulated vendor bills. */
async function billedOutput(): Promise<number | undefined> {
  await sim.outcomesSettled();
  return sim.outcomes.at(-1)?.usage?.output;
}

describe('no output limit sent: the answer stops at the model most', () => {
  it('chat completions, plain and streamed: finish_reason length, completion_tokens the most', async () => {
    const plain = await openai().chat.completions.create({ model: 'b-capped', messages: [{ role: 'user', content: LONG }] });
    expect(plain.choices[0]!.finish_reason).toBe('length');
    expect(plain.usage!.completion_tokens).toBe(MOST);
    expect(plain.choices[0]!.message.content!.length).toBeLessThanOrEqual(MOST * 4);
    expect(await billedOutput()).toBe(MOST);

    const stream = await openai().chat.completions.create({
      model: 'b-capped',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: LONG }],
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('length');
    expect(chunks.at(-1)!.usage!.completion_tokens).toBe(MOST);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('').length).toBeLessThanOrEqual(MOST * 4);
    expect(await billedOutput()).toBe(MOST);

    // A limit below the most still stops the answer there; a model with no most writes the whole answer.
    const low = await openai().chat.completions.create({
      model: 'b-capped',
      max_completion_tokens: 10,
      messages: [{ role: 'user', content: LONG }],
    });
    expect(low.choices[0]!.finish_reason).toBe('length');
    expect(low.usage!.completion_tokens).toBe(10);
    const free = await openai().chat.completions.create({ model: 'b-unbounded', messages: [{ role: 'user', content: LONG }] });
    expect(free.choices[0]!.finish_reason).toBe('stop');
    expect(free.choices[0]!.message.content).toContain('word2000');
  });

  it('responses, plain and streamed: incomplete for max_output_tokens, output_tokens the most', async () => {
    const plain = await openai().responses.create({ model: 'b-capped', input: LONG });
    expect(plain.status).toBe('incomplete');
    expect(plain.incomplete_details?.reason).toBe('max_output_tokens');
    expect(plain.usage!.output_tokens).toBe(MOST);
    expect(await billedOutput()).toBe(MOST);

    const stream = await openai().responses.create({ model: 'b-capped', input: LONG, stream: true });
    let last: { type: string; response?: unknown } | undefined;
    for await (const e of stream) last = e;
    expect(last!.type).toBe('response.incomplete');
    const done = last!.response as { status: string; incomplete_details: { reason: string }; usage: { output_tokens: number } };
    expect(done.status).toBe('incomplete');
    expect(done.incomplete_details.reason).toBe('max_output_tokens');
    expect(done.usage.output_tokens).toBe(MOST);
    expect(await billedOutput()).toBe(MOST);
  });
});
