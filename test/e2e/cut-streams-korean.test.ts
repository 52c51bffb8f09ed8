// A Korean answer whose stream the vendor breaks is charged at least what a real tokenizer counts in what was
// delivered, on every door and vendor protocol: found by an attack, where the estimate (four characters a
// token) billed Korean at about 40% of its tokens. Real HTTP to the gateway and its bundled simulator, which
// counts usage with the tokenizer; the fault cuts each stream well before the vendor's final usage.
import { readFileSync } from 'node:fs';
import { countTokens as o200kTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { A_VERSION, nano, PRICES, post, sleep } from './e2e.ts';

const KOREAN = readFileSync(new URL('../fixtures/estimate/ko-constitution.txt', import.meta.url), 'utf8').split('\n')[0]!;

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

/** The text a client received from a stream: chat chunks' content, or native text deltas. */
function deliveredText(sse: string): string {
  let text = '';
  for (const line of sse.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    let data: any;
    try {
      data = JSON.parse(line.slice(6));
    } catch {
      continue;
    }
    if (typeof data?.choices?.[0]?.delta?.content === 'string') text += data.choices[0].delta.content;
    if (data?.type === 'content_block_delta' && typeof data.delta?.text === 'string') text += data.delta.text;
  }
  return text;
}

const CASES = [
  {
    name: 'vendor A, messages door',
    path: '/v1/messages',
    route: 'a0',
    model: 'a-top-5.5' as const,
    headers: A_VERSION,
    body: { max_tokens: 4000 },
  },
  {
    name: 'vendor A, chat door (translated)',
    path: '/v1/chat/completions',
    route: 'a0',
    model: 'a-top-5.5' as const,
    headers: {},
    body: { max_tokens: 4000 },
  },
  {
    name: 'vendor B, chat door',
    path: '/v1/chat/completions',
    route: 'b0',
    model: 'b-5' as const,
    headers: {},
    body: { max_completion_tokens: 4000 },
  },
];

describe('a Korean answer cut mid-stream by the vendor', () => {
  for (const c of CASES) {
    for (const afterEvents of [5, 9, 13]) {
      it(`${c.name}, cut after ${afterEvents} events: charged at least the tokenizer's count of what was delivered`, async () => {
        t.sim.inject(c.route, { kind: 'stream-error', afterEvents });
        const before = await t.balance();
        const res = await post(
          t,
          c.path,
          { model: c.model, stream: true, messages: [{ role: 'user', content: KOREAN }], ...c.body },
          c.headers,
        );
        expect(res.status).toBe(200);
        const sse = await res.text();
        expect(sse).not.toContain('[DONE]');
        expect(sse).not.toContain('message_stop');
        for (let i = 0; i < 200 && (await t.held()) !== 0n; i++) await sleep(10);
        const charged = before - (await t.balance());
        const delivered = deliveredText(sse);
        expect(delivered.length).toBeGreaterThan(0);
        const price = PRICES[c.model];
        const floor = nano(o200kTokens(delivered), price.output) + nano(o200kTokens(KOREAN), price.input);
        expect(charged, `charged ${charged} nano for ${o200kTokens(delivered)} tokens delivered`).toBeGreaterThanOrEqual(floor);
      });
    }
  }
});
