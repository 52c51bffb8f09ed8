// Content the vendor fetches itself (a document by URL, a page read by its fetch tool), or a document inline in a
// form billed per page, enters the prompt at a size the body does not show: the hold covers the model's context
// window, so a client cannot point a small-wallet call at a 300-page PDF and pay for the URL's bytes. A file by id
// is refused before the hold (no file is a wallet's: test/attack/vendor-object-references.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { A_VERSION, post } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ credits: 20_000 });
});
afterAll(() => t?.close());

const PDF = 'https://example.com/300-pages.pdf';
const INLINE_PDF = Buffer.from('%PDF-1.4\n%%EOF\n').toString('base64');
const cases: [string, string, Record<string, unknown>, Record<string, string>][] = [
  [
    'messages: a document by URL',
    '/v1/messages',
    {
      model: 'a-top-5',
      max_tokens: 1,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'url', url: PDF } },
            { type: 'text', text: 'summarise' },
          ],
        },
      ],
    },
    A_VERSION,
  ],
  [
    'messages: a PDF document inline',
    '/v1/messages',
    {
      model: 'a-top-5',
      max_tokens: 1,
      messages: [
        { role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: INLINE_PDF } }] },
      ],
    },
    A_VERSION,
  ],
  [
    'messages: the web fetch tool',
    '/v1/messages',
    {
      model: 'a-top-5',
      max_tokens: 1,
      tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }],
      messages: [{ role: 'user', content: 'read it' }],
    },
    A_VERSION,
  ],
  [
    'responses: an input file by URL',
    '/v1/responses',
    {
      model: 'b-5',
      max_output_tokens: 16,
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_file', file_url: PDF },
            { type: 'input_text', text: 'summarise' },
          ],
        },
      ],
    },
    {},
  ],
  [
    'chat: a PDF file inline',
    '/v1/chat/completions',
    {
      model: 'b-5',
      max_completion_tokens: 1,
      messages: [
        { role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${INLINE_PDF}` } }] },
      ],
    },
    {},
  ],
];

describe('content the vendor fetches is held at the context window', () => {
  for (const [name, path, body, headers] of cases) {
    it(`${name}: 402 on a 20,000-credit wallet, nothing sent or held`, async () => {
      const before = await t.balance();
      const sent = t.sim.received.length;
      const res = await post(t, path, body, headers);
      expect(res.status, await res.text()).toBe(402);
      expect(t.sim.received.length).toBe(sent);
      expect(await t.balance()).toBe(before);
    });
  }

  it('the same call with the text inline is served', async () => {
    const res = await post(
      t,
      '/v1/messages',
      { model: 'a-top-5', max_tokens: 1, messages: [{ role: 'user', content: 'summarise this' }] },
      A_VERSION,
    );
    expect(res.status, await res.text()).toBe(200);
  });
});
