// The bundled simulator (what `npm start` runs against) refuses input a real vendor refuses, with a 400 in the
// vendor's shape, instead of looping or allocating without bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../simulator/index.ts';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());

function post(path: string, body: unknown) {
  return fetch(`${sim.routeUrl('b0')}${path}`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-b', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('simulator input validation', () => {
  for (const dimensions of [1e308, 1e9, 0, -3, 2.5, '8']) {
    it(`embeddings with dimensions ${JSON.stringify(dimensions)} answer 400 naming dimensions`, async () => {
      const res = await post('/v1/embeddings', { model: 'emb', input: 'hi', dimensions });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error', param: 'dimensions' });
    });
  }

  it('embeddings with a sane dimensions still answer, and the simulator lives on', async () => {
    await post('/v1/embeddings', { model: 'emb', input: 'hi', dimensions: 1e308 });
    const res = await post('/v1/embeddings', { model: 'emb', input: 'hi', dimensions: 16 });
    expect(res.status).toBe(200);
    expect((await res.json()).data[0].embedding).toHaveLength(16);
  });

  it('a prompt asking for a huge number of tool calls gets a bounded answer', async () => {
    const res = await post('/v1/chat/completions', {
      model: 'b-5',
      messages: [{ role: 'user', content: 'go [[sim:tools=100000]]' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
    });
    expect(res.status).toBe(200);
    expect((await res.json()).choices[0].message.tool_calls.length).toBeLessThanOrEqual(100);
  }, 10_000);

  it('images with a fractional n answer 400 naming n', async () => {
    const res = await post('/v1/images/generations', { model: 'img', prompt: 'a cat', n: 1.5 });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe('n');
  });
});
