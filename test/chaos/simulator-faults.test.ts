// The simulator's fault kinds do on the wire what their names say, and each request leaves an outcome record
// telling what it delivered and what usage the vendor bills: the chaos suite's auditor relies on both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../simulator/index.ts';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim?.close());

const chat = (route: string, body: object) =>
  fetch(`${sim.routeUrl(route)}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5', ...body }),
  });
const messages = (route: string, body: object) =>
  fetch(`${sim.routeUrl(route)}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'a-top-5.5', max_tokens: 100, ...body }),
  });
const user = (text: string) => ({ messages: [{ role: 'user', content: text }] });

async function outcomeOf(tag: string) {
  await sim.outcomesSettled();
  const found = sim.outcomes.filter((o) => o.callTag === tag);
  expect(found).toHaveLength(1);
  return found[0];
}

describe('outcome records', () => {
  it('a complete answer records the usage it reported', async () => {
    const res = await chat('o1', user('hello [[sim:call=t1]] [[sim:usage input=10 output=20]]'));
    const body = (await res.json()) as any;
    const o = await outcomeOf('t1');
    expect(o).toMatchObject({ delivered: 'complete', refused: false, usageReported: true, status: 200, streaming: false, fault: null });
    expect(o!.usage).toMatchObject({ input: 10, output: 20 });
    expect(body.usage.completion_tokens).toBe(20);
  });

  it('an error status is a refusal with no usage', async () => {
    sim.inject('o2', { kind: 'status', status: 529 });
    const res = await messages('o2', user('x [[sim:call=t2]]'));
    expect(res.status).toBe(529);
    await res.text();
    expect(await outcomeOf('t2')).toMatchObject({ delivered: 'none', refused: true, usage: null, fault: 'status' });
  });
});

describe('fault kinds', () => {
  it('reset-mid-stream: N events, then the connection breaks without an error event', async () => {
    sim.inject('f1', { kind: 'reset-mid-stream', afterEvents: 3 });
    const res = await chat('f1', { stream: true, ...user('x [[sim:long=20]] [[sim:call=t3]]') });
    let text = '';
    await expect(
      (async () => {
        for await (const chunk of res.body as any) text += Buffer.from(chunk).toString();
      })(),
    ).rejects.toThrow();
    expect(text.match(/^data: /gm)?.length).toBe(3);
    expect(text).not.toContain('error');
    expect(await outcomeOf('t3')).toMatchObject({ delivered: 'partial', events: 3, usage: null, fault: 'reset-mid-stream' });
  });

  it('stall with headers: the head, then nothing until the stall ends and the socket is destroyed', async () => {
    sim.inject('f2', { kind: 'stall', ms: 300, headers: true });
    const started = Date.now();
    const res = await chat('f2', user('x [[sim:call=t4]]'));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(await outcomeOf('t4')).toMatchObject({ delivered: 'none', usage: null, fault: 'stall' });
  });

  it('stall without headers: no head at all', async () => {
    sim.inject('f3', { kind: 'stall', ms: 200 });
    await expect(chat('f3', user('x [[sim:call=t5]]'))).rejects.toThrow();
    expect(await outcomeOf('t5')).toMatchObject({ delivered: 'none', refused: true, status: null });
  });

  it('stall mid-stream: N events, then silence, then the socket is destroyed', async () => {
    sim.inject('f4', { kind: 'stall', ms: 200, afterEvents: 2 });
    const res = await messages('f4', { stream: true, ...user('x [[sim:call=t6]]') });
    let text = '';
    await expect(
      (async () => {
        for await (const chunk of res.body as any) text += Buffer.from(chunk).toString();
      })(),
    ).rejects.toThrow();
    expect(text.match(/^data: /gm)?.length).toBe(2);
    expect(await outcomeOf('t6')).toMatchObject({ delivered: 'partial', events: 2 });
  });

  it('malformed-json: a 200 whose JSON breaks off; streaming requests pass it by', async () => {
    sim.inject('f5', { kind: 'malformed-json' });
    const streamed = await chat('f5', { stream: true, ...user('x [[sim:call=t7a]]') });
    expect(await streamed.text()).toContain('[DONE]');
    const res = await chat('f5', user('x [[sim:call=t7]]'));
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(() => JSON.parse(text)).toThrow();
    expect(await outcomeOf('t7')).toMatchObject({ delivered: 'garbled', usage: null, fault: 'malformed-json' });
  });

  it('malformed-sse: garbage and a broken data frame, then the stream goes on to its usage', async () => {
    sim.inject('f6', { kind: 'malformed-sse', afterEvents: 2 });
    const res = await chat('f6', {
      stream: true,
      stream_options: { include_usage: true },
      ...user('x [[sim:call=t8]] [[sim:usage output=7]]'),
    });
    const text = await res.text();
    expect(text).toContain('data: {"broken": [1, 2,\n\n');
    expect(text).toContain('"completion_tokens":7');
    expect(text).toContain('[DONE]');
    expect(await outcomeOf('t8')).toMatchObject({ delivered: 'complete', usageReported: true, usage: { output: 7 } });
  });

  it('usage-missing: no usage anywhere, JSON or stream; the record keeps what the vendor really produced', async () => {
    sim.inject('f7', { kind: 'usage-missing', times: 2 });
    const json = await messages('f7', user('x [[sim:call=t9]] [[sim:usage input=5 output=6]]'));
    expect(JSON.stringify(await json.json())).not.toContain('usage');
    const streamed = await messages('f7', { stream: true, ...user('x [[sim:call=t10]] [[sim:usage input=5 output=6]]') });
    const text = await streamed.text();
    expect(text).toContain('message_stop');
    expect(text).not.toContain('usage');
    for (const tag of ['t9', 't10']) {
      expect(await outcomeOf(tag)).toMatchObject({ delivered: 'complete', usageReported: false, usage: { input: 5, output: 6 } });
    }
  });

  it('usage-inflated: the output figure far above max_tokens, in the answer and the record', async () => {
    sim.inject('f8', { kind: 'usage-inflated', factor: 500 });
    const res = await chat('f8', { max_tokens: 10, ...user('x [[sim:call=t11]] [[sim:usage output=4]]') });
    const body = (await res.json()) as any;
    expect(body.usage.completion_tokens).toBe(2000);
    expect(await outcomeOf('t11')).toMatchObject({ delivered: 'complete', usageReported: true, usage: { output: 2000 } });
  });

  it('a client that leaves mid-stream leaves a partial record', async () => {
    const ac = new AbortController();
    const res = await fetch(`${sim.routeUrl('f9')}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', stream: true, ...user('x [[sim:long=20000]] [[sim:call=t12]]') }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    expect(await outcomeOf('t12')).toMatchObject({ delivered: 'partial' });
  });
});
