// Arbitrary JSON at every JSON door: never a 5xx, never a hold left behind, and the journal still adds
// up to the balance afterwards.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const DOORS: { path: string; models: string[]; headers?: Record<string, string> }[] = [
  { path: '/v1/chat/completions', models: ['a-top-5.5', 'a-mid-4.5', 'b-5.5', 'c-flash-3', 'e-open-70b'] },
  { path: '/v1/messages', models: ['a-top-5.5', 'a-high-4.8'], headers: { 'anthropic-version': '2023-06-01' } },
  { path: '/v1/responses', models: ['b-pro-5', 'b-4.1-mini'] },
  { path: '/v1/images/generations', models: ['image-b-1', 'image-d-1'] },
  { path: '/v1/audio/speech', models: ['tts-1'] },
  { path: '/v1/embeddings', models: ['text-embedding-3-small'] },
  { path: '/v1/moderations', models: ['omni-moderation-latest'] },
];

const anyJson = fc.jsonValue({ maxDepth: 4 });
const messageLike = fc.record(
  { role: fc.constantFrom('user', 'assistant', 'system', 'tool', 'developer', 'x'), content: fc.oneof(fc.string(), anyJson) },
  { requiredKeys: [] },
);
const bodyFor = (models: string[]) =>
  fc.record(
    {
      model: fc.oneof(fc.constantFrom(...models), anyJson),
      messages: fc.oneof(fc.array(messageLike, { maxLength: 3 }), anyJson),
      input: fc.oneof(fc.string(), anyJson),
      prompt: fc.oneof(fc.string(), anyJson),
      max_tokens: fc.oneof(fc.integer({ min: -5, max: 100 }), anyJson),
      stream: fc.oneof(fc.boolean(), anyJson),
      tools: fc.oneof(fc.array(fc.record({ type: fc.string(), name: fc.string() }, { requiredKeys: [] }), { maxLength: 2 }), anyJson),
      tool_choice: anyJson,
      stop: anyJson,
      temperature: anyJson,
      reasoning_effort: anyJson,
      service_tier: anyJson,
      extra: anyJson,
    },
    { requiredKeys: [] },
  );

describe('fuzzing the JSON doors', () => {
  for (const door of DOORS) {
    it(`${door.path}: no 5xx and no hold left for arbitrary bodies`, async () => {
      await fc.assert(
        fc.asyncProperty(bodyFor(door.models), async (body) => {
          const res = await fetch(`${t.url}${door.path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', ...door.headers },
            body: JSON.stringify(body),
          });
          await res.arrayBuffer();
          expect(res.status, JSON.stringify(body).slice(0, 300)).toBeLessThan(500);
        }),
        { numRuns: 60 },
      );
      const balance = await t.gw.ledger.balance(t.walletId);
      expect(balance.reservedNano).toBe(0n);
      const journal = await t.gw.ledger.journalSum(t.walletId);
      expect(journal.availableNano).toBe(balance.availableNano);
    }, 60_000);
  }
});
