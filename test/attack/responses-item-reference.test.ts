// Attack (wt-attack), a probe: /v1/responses input items of type `item_reference` name an item the vendor stored
// (a message or a tool output of an earlier response) and the vendor puts it into the prompt, as it does for
// `previous_response_id` and `conversation`, which the hold counts as the whole context window (docs/api.md). An
// item reference is held by its bytes only (text-bounds.ts pullsContentIn does not know it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

async function heldFor(body: unknown) {
  t.sim.inject('b0', { kind: 'delay', ms: 1_000 });
  const p = post(t, '/v1/responses', body);
  let held = 0n;
  for (let i = 0; i < 12; i++) {
    await sleep(50);
    const h = await t.held();
    if (h > held) held = h;
  }
  const res = await p;
  await res.text();
  return { status: res.status, held };
}

describe('stored items replayed as input on /v1/responses', () => {
  it('item_reference is held like previous_response_id', async () => {
    // Names of this wallet's own answer: another wallet's, or one never made, is refused before any hold (issue 39).
    const first = (await (await post(t, '/v1/responses', { model: 'b-6', max_output_tokens: 16, input: 'hi' })).json()) as {
      id: string;
      output: { id: string }[];
    };
    const byPrevious = await heldFor({ model: 'b-6', max_output_tokens: 16, previous_response_id: first.id, input: 'go on' });
    const byItems = await heldFor({
      model: 'b-6',
      max_output_tokens: 16,
      input: [
        ...Array.from({ length: 20 }, () => ({ type: 'item_reference', id: first.output[0]!.id })),
        { role: 'user', content: 'go on' },
      ],
    });
    expect(byPrevious.status).toBe(200);
    expect(byItems.status).toBe(200);
    expect(byPrevious.held).toBeGreaterThan(0n);
    expect(byItems.held).toBeGreaterThanOrEqual(byPrevious.held);
  }, 30_000);
});
