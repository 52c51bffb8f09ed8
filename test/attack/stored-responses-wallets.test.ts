// Issue 39: every wallet calls through one vendor account, so a responses body naming what the vendor stored
// (`previous_response_id`, an input `item_reference`, a `conversation`) would replay whichever wallet's
// conversation it names. The gateway records whose each stored answer is, and a call naming an id its wallet did
// not store is a 404 naming the field, before anything is held, sent or charged; its own wallet continues.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSse } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { walletView } from '../helpers/ledger.ts';

let t: TestGateway;
let keyY: string;
let walletY: string;

beforeAll(async () => {
  t = await startTestGateway();
  walletY = (await t.gw.ledger.createWallet({ credits: 100_000_000 })).id;
  keyY = (await t.gw.keys.createApiKey(walletY, { name: 'other school' })).key;
});
afterAll(() => t?.close());

const respond = (key: string, body: Record<string, unknown>) =>
  fetch(`${t.url}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5-mini', max_output_tokens: 32, ...body }),
  });

/** Wallet X's answer, whole: its id and its output items' ids. */
async function answerOfX(): Promise<{ id: string; items: string[] }> {
  const res = await respond(t.apiKey, { input: 'tell me about my essay' });
  expect(res.status).toBe(200);
  const json = (await res.json()) as { id: string; output: { id: string }[] };
  return { id: json.id, items: json.output.map((o) => o.id) };
}

/** What wallet Y can spend, what is held, and what the vendor has received, to compare around a refusal. */
async function ledgerOfY() {
  const view = await walletView(t.gw, walletY);
  return { spendable: view.spendableNano, held: view.heldNano, sent: t.received('b').length };
}

/** Y names X's id: a 404 in the responses door's shape naming the field, and nothing held, sent or charged. */
async function refusedForY(body: Record<string, unknown>, field: string) {
  const before = await ledgerOfY();
  const res = await respond(keyY, body);
  const json = (await res.json()) as { error: { type: string; code: string; param: string; message: string } };
  expect(res.status).toBe(404);
  expect(json.error).toMatchObject({ type: 'not_found_error', code: 'not_found_error', param: field });
  expect(json.error.message).toContain(field);
  expect(json.error.message).toContain('Nothing was sent or charged');
  expect(await ledgerOfY()).toEqual(before);
  return json.error.message;
}

describe("a stored answer is served only to its own wallet's calls", () => {
  it("previous_response_id of another wallet's response is a 404; the same as an id never made; its own wallet continues", async () => {
    const x = await answerOfX();
    const foreign = await refusedForY({ previous_response_id: x.id, input: 'go on' }, 'previous_response_id');
    const unknown = await refusedForY({ previous_response_id: 'resp_never_made', input: 'go on' }, 'previous_response_id');
    // Nothing tells another wallet's id from one that never existed.
    expect(foreign.replace(x.id, 'ID')).toBe(unknown.replace('resp_never_made', 'ID'));
    const sent = t.received('b').length;
    const res = await respond(t.apiKey, { previous_response_id: x.id, input: 'go on' });
    expect(res.status).toBe(200);
    await res.text();
    expect(t.received('b').length).toBe(sent + 1);
    expect((t.received('b').at(-1)?.body as { previous_response_id?: string } | undefined)?.previous_response_id).toBe(x.id);
  });

  it("an item_reference to another wallet's output item is a 404 naming input[i].id, typed or not; its own wallet's passes", async () => {
    const x = await answerOfX();
    expect(x.items.length).toBeGreaterThan(0);
    const item = x.items[0];
    await refusedForY(
      {
        input: [
          { role: 'user', content: 'hi' },
          { type: 'item_reference', id: item },
        ],
      },
      'input[1].id',
    );
    // The format lets a reference leave out its type; a reasoning item is read by its id from the vendor's store.
    await refusedForY({ input: [{ id: item }] }, 'input[0].id');
    await refusedForY(
      {
        input: [
          { type: 'reasoning', id: item, summary: [] },
          { role: 'user', content: 'hi' },
        ],
      },
      'input[0].id',
    );
    // One of its own and one of another wallet's: the foreign one is named.
    const own = (await (await respond(keyY, { input: 'mine' })).json()) as { output: { id: string }[] };
    const mixed = [
      { type: 'item_reference', id: own.output[0]!.id },
      { type: 'item_reference', id: item },
    ];
    await refusedForY({ input: mixed }, 'input[1].id');
    const res = await respond(t.apiKey, {
      input: [
        { type: 'item_reference', id: item },
        { role: 'user', content: 'go on' },
      ],
    });
    expect(res.status).toBe(200);
    await res.text();
  });

  it("a streamed answer is recorded too: its id and items are its wallet's, not another's", async () => {
    const res = await respond(t.apiKey, { input: 'stream it', stream: true });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    const completed = events.find((e) => e.data?.type === 'response.completed')?.data.response;
    expect(completed?.id).toMatch(/^resp_/);
    await refusedForY({ previous_response_id: completed.id, input: 'go on' }, 'previous_response_id');
    await refusedForY({ input: [{ type: 'item_reference', id: completed.output[0].id }] }, 'input[0].id');
    for (const body of [
      { previous_response_id: completed.id, input: 'go on' },
      { input: [{ type: 'item_reference', id: completed.output[0].id }] },
    ]) {
      const again = await respond(t.apiKey, body);
      expect(again.status).toBe(200);
      await again.text();
    }
  });

  it("a conversation is never a wallet's (the gateway makes none): a 404 naming it, nothing sent", async () => {
    await refusedForY({ conversation: 'conv_abc', input: 'hi' }, 'conversation');
    await refusedForY({ conversation: { id: 'conv_abc' }, input: 'hi' }, 'conversation.id');
  });

  it('a name that is not a string is refused the same way, never passed on', async () => {
    await refusedForY({ previous_response_id: ['resp_x'], input: 'hi' }, 'previous_response_id');
    await refusedForY({ input: [{ type: 'item_reference', id: 42 }] }, 'input[0].id');
  });
});
