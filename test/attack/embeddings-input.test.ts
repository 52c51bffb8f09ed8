// An embeddings body the vendor would refuse is refused by the gateway first (README, "Guarantees": a call refused
// for its input is refused before anything is held or sent). An attack found `input` of {}, [] or true and
// `dimensions` of -1 or "8" held, sent to the vendor and refused there with its 400: a wallet or key at its limit
// then got 402 or 429 instead of the 400 the body deserves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectInvalid, post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const MODEL = 'text-embedding-3-small';

/** Sends `body` and checks the 400 names `param`, and that no vendor was asked and no money moved. */
async function refusedFirst(body: Record<string, unknown>, param: string): Promise<void> {
  const sent = t.sim.received.length;
  const before = await t.balance();
  const refused = await expectInvalid(await post(t, '/v1/embeddings', { model: MODEL, ...body }));
  expect(refused.error.param).toBe(param);
  expect(t.sim.received.length).toBe(sent);
  expect(await t.balance()).toBe(before);
}

describe('embeddings: a body the vendor would refuse is refused before any hold or vendor call', () => {
  const badInputs: [string, unknown][] = [
    ['an object', { a: 1 }],
    ['an empty array', []],
    ['true', true],
    ['null', null],
    ['an empty string', ''],
    ['an array with an empty string', ['']],
    ['a fractional token id', [1.5]],
    ['a negative token id', [-1]],
    ['an empty token list', [[]]],
    ['texts and token ids mixed', ['hi', 1]],
    ['2,049 entries', Array.from({ length: 2049 }, () => 'x')],
  ];
  for (const [name, input] of badInputs) it(`input: ${name}`, () => refusedFirst({ input }, 'input'));

  for (const dimensions of [-1, 0, 2.5, '8', true])
    it(`dimensions: ${JSON.stringify(dimensions)}`, () => refusedFirst({ input: 'hi', dimensions }, 'dimensions'));

  it('encoding_format: "xyz"', async () => {
    const sent = t.sim.received.length;
    const body = await expectInvalid(await post(t, '/v1/embeddings', { model: MODEL, input: 'hi', encoding_format: 'xyz' }));
    expect(body.error.message).toContain('encoding_format "xyz" is not offered');
    expect(t.sim.received.length).toBe(sent);
  });
});

describe('embeddings: every shape the vendors take is served and charged', () => {
  const goodInputs: [string, unknown][] = [
    ['one text', 'hi'],
    ['texts', ['hi', 'there']],
    ['token ids', [1, 2, 3]],
    ['token-id lists', [[1, 2], [3]]],
  ];
  for (const [name, input] of goodInputs)
    it(name, async () => {
      const before = await t.balance();
      const res = await post(t, '/v1/embeddings', { model: MODEL, input, dimensions: 8, encoding_format: 'base64' });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await t.balance()).toBeLessThan(before);
    });
});
