// Attack (wt-attack), a probe of vendor fields the chat door passes on: fields that ask a host to search the
// web (billed per search or per source by the hosts that take them: web_search_options, xAI-style
// search_parameters, OpenRouter-style plugins) sent to vendors B-E through /v1/chat/completions. Vendor A's
// chain refuses web_search_options; the chat-completions chain forwards the body as sent and holds no search.
// Whether vendors D and E bill them is the vendor's word, not shown by the bundled simulator: this records what
// the gateway does: refuses them before anything is held or sent (config/doors.yaml).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const cases: [string, Record<string, unknown>][] = [
  ['e-open-70b', { web_search_options: { search_context_size: 'high' } }],
  ['e-open-70b', { plugins: [{ id: 'web', max_results: 50 }] }],
  ['d-4', { search_parameters: { mode: 'on', max_search_results: 50 } }],
  ['d-4', { web_search_options: { search_context_size: 'high' } }],
  ['c-flash-2.5', { web_search_options: {} }],
];

describe('search fields on the chat door, vendors B-E', () => {
  for (const [model, extra] of cases) {
    it(`${model} ${Object.keys(extra)[0]}`, async () => {
      const sent = t.sim.received.length;
      const res = await post(t, '/v1/chat/completions', {
        model,
        max_tokens: 16,
        messages: [{ role: 'user', content: 'news today' }],
        ...extra,
      });
      const text = await res.text();
      const got = t.sim.received.slice(sent).map((r) => r.body as any);
      const forwarded = got.some((b) => b && Object.keys(extra).every((k) => k in b));
      expect(forwarded, `${text.slice(0, 200)}`).toBe(false);
      expect(res.status, text).toBe(400);
    });
  }
});
