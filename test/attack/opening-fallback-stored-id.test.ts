// A responses stream whose first route fails after its opening (response.created) falls back to the next route
// (stream_opening_hold_ms). The charge must record as the wallet's stored answer the response the client received
// (the answering route's id), not the id of the failed route's response.created, which the client never saw.
// (The failed route's response.created once named the stored answer, so the follow-up naming the id the client
// got was refused with 404.)
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseSse } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterEach(() => t.sim.clearFaults());
afterAll(() => t?.close());

const respond = (body: Record<string, unknown>) =>
  fetch(`${t.url}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5', max_output_tokens: 32, ...body }),
  });

async function streamedId(): Promise<{ id: string; depth: string | null }> {
  const res = await respond({ input: 'Hello', store: true, stream: true });
  expect(res.status).toBe(200);
  const frames = parseSse(await res.text());
  const completed = frames.find((f) => f.data?.type === 'response.completed');
  return { id: completed?.data?.response?.id, depth: res.headers.get('x-gateway-fallback-depth') };
}

describe('stored response id after a fallback from a held opening', () => {
  it('control: no fault, the streamed id can be continued', async () => {
    const { id, depth } = await streamedId();
    expect(depth).toBe('0');
    const next = await respond({ input: 'go on', previous_response_id: id });
    expect(next.status).toBe(200);
    await next.text();
  });

  it('b0 fails right after response.created: the id the client got (from b1) can be continued', async () => {
    t.sim.inject('b0', { kind: 'stream-error', afterEvents: 1 });
    const { id, depth } = await streamedId();
    expect(depth).toBe('1');
    expect(await t.held()).toBe(0n);
    const next = await respond({ input: 'go on', previous_response_id: id });
    expect(next.status).toBe(200); // not 404 "which no call of this wallet stored"
    await next.text();
  });
});
