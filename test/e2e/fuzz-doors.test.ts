// Arbitrary JSON at every JSON door: never a 5xx, never a hold left behind, and the journal still adds
// up to the balance afterwards.

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp, walletView } from '../helpers/ledger.ts';

let t: TestGateway;
let cases = 0;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(async () => {
  console.log(`fuzz-doors: ${cases} cases ran`);
  await t?.close();
});

// `asyncJobs`: accepted calls keep their hold until the job ends (videos), so only the journal is checked.
const DOORS: { path: string; models: string[]; headers?: Record<string, string>; asyncJobs?: boolean }[] = [
  { path: '/v1/chat/completions', models: ['a-top-5.5', 'a-mid-4.5', 'b-5.5', 'c-flash-3', 'e-open-70b'] },
  { path: '/v1/messages', models: ['a-top-5.5', 'a-high-4.8'], headers: { 'anthropic-version': '2023-06-01' } },
  { path: '/v1/responses', models: ['b-pro-5', 'b-4.1-mini'] },
  { path: '/v1/images/generations', models: ['image-b-1', 'image-d-1'] },
  { path: '/v1/audio/speech', models: ['tts-1'] },
  { path: '/v1/embeddings', models: ['text-embedding-3-small'] },
  { path: '/v1/moderations', models: ['omni-moderation-latest'] },
  { path: '/v1/videos', models: ['video-d-1', 'video-d-2'], asyncJobs: true },
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
      seconds: fc.oneof(fc.constantFrom('4', 8, '15', 0, '1.5'), anyJson),
      size: fc.oneof(fc.constantFrom('1280x720', '1920x1080', '10x10'), anyJson),
      resolution: anyJson,
      aspect_ratio: anyJson,
      image_url: fc.oneof(fc.constantFrom('https://example.com/a.png', 'data:image/png;base64,AAAA', 'ftp://x'), anyJson),
      extra: anyJson,
    },
    { requiredKeys: [] },
  );

describe('fuzzing the JSON doors', () => {
  for (const door of DOORS) {
    it(`${door.path}: no 5xx, no hold left behind, the journal adds up`, async () => {
      await fc.assert(
        fc.asyncProperty(bodyFor(door.models), async (body) => {
          const res = await fetch(`${t.url}${door.path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', ...door.headers },
            body: JSON.stringify(body),
          });
          await res.arrayBuffer();
          cases += 1;
          expect(res.status, JSON.stringify(body).slice(0, 300)).toBeLessThan(500);
        }),
        { numRuns: 60 },
      );
      if (!door.asyncJobs) expect((await walletView(t.gw, t.walletId)).heldNano).toBe(0n);
      await expectJournalAddsUp(t.gw.db, t.walletId);
    }, 60_000);
  }
});

describe('fuzzing the key doors', () => {
  it('POST and PATCH /v1/keys: no 5xx for arbitrary bodies and queries', async () => {
    const { key: management } = await t.gw.keys.createManagementKey(t.walletId);
    const auth = { authorization: `Bearer ${management}`, 'content-type': 'application/json' };
    const { id } = await t.gw.keys.createApiKey(t.walletId, { name: 'fuzz target' });
    const keyBody = fc.record(
      {
        count: fc.oneof(fc.integer({ min: -2, max: 3 }), anyJson),
        name: fc.oneof(fc.string({ maxLength: 50 }), anyJson),
        name_prefix: fc.oneof(fc.string({ maxLength: 25 }), anyJson),
        audience: fc.oneof(fc.constantFrom('student', 'teacher', null), anyJson),
        monthly_limit_credits: fc.oneof(fc.integer(), fc.constant(null), anyJson),
        daily_limit_credits: fc.oneof(fc.integer(), fc.constant(null), anyJson),
        expires_on: fc.oneof(fc.constantFrom('2030-01-01', '2020-01-01', '2026-02-30', null), anyJson),
        extra: anyJson,
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(keyBody, fc.string({ maxLength: 12 }), async (body, query) => {
        cases += 3;
        const created = await fetch(`${t.url}/v1/keys`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
        expect(created.status, JSON.stringify(body)).toBeLessThan(500);
        await created.arrayBuffer();
        const patched = await fetch(`${t.url}/v1/keys/${id}`, { method: 'PATCH', headers: auth, body: JSON.stringify(body) });
        expect(patched.status, JSON.stringify(body)).toBeLessThan(500);
        await patched.arrayBuffer();
        const listed = await fetch(`${t.url}/v1/keys?limit=${encodeURIComponent(query)}&offset=${encodeURIComponent(query)}`, {
          headers: auth,
        });
        expect(listed.status, query).toBeLessThan(500);
        await listed.arrayBuffer();
      }),
      { numRuns: 60 },
    );
  }, 60_000);
});
