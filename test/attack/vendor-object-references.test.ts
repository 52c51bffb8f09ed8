// Attack: one vendor account serves every wallet, and the gateway has no files,
// vector stores, prompts or containers of its own, so an id naming one can only reach the operator's: a stored
// prompt (`prompt.id`), a file (`file_id` in a part or a block's source), a vector store (file_search's
// `vector_store_ids`), a container. Each is refused by config/doors.yaml with 400 in the door's shape naming the
// field, before anything is held, charged or sent; the same content sent inline is still forwarded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A_VERSION, post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const PDF = `data:application/pdf;base64,${Buffer.from('%PDF-1.4\n%%EOF\n').toString('base64')}`;
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const user = (content: unknown[]) => [{ role: 'user', content }];
const responses = (extra: Record<string, unknown>) => ({ model: 'b-5', max_output_tokens: 16, input: 'summarise', ...extra });
const chat = (model: string, content: unknown[]) => ({ model, max_completion_tokens: 16, messages: user(content) });
const messages = (extra: Record<string, unknown>) => ({
  model: 'a-top-5',
  max_tokens: 16,
  messages: user([{ type: 'text', text: 'hi' }]),
  ...extra,
});
const fileSource = { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' };

/** A door, the body, and the field the refusal names. */
const refused: [string, string, Record<string, unknown>, string][] = [
  ['responses: a stored prompt', '/v1/responses', responses({ prompt: { id: 'pmpt_abc', version: '2' } }), 'prompt.id'],
  [
    'responses: an input_file by id',
    '/v1/responses',
    responses({
      input: user([
        { type: 'input_file', file_id: 'file-abc' },
        { type: 'input_text', text: 'summarise' },
      ]),
    }),
    'input[0].content[0].file_id',
  ],
  [
    'responses: an input_image by id',
    '/v1/responses',
    responses({
      input: user([
        { type: 'input_text', text: 'look' },
        { type: 'input_image', file_id: 'file-abc' },
      ]),
    }),
    'input[0].content[1].file_id',
  ],
  [
    "responses: a function call's output naming a file",
    '/v1/responses',
    responses({
      input: [
        { type: 'function_call', call_id: 'c1', name: 'fetch', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_file', file_id: 'file-abc' }] },
      ],
    }),
    'input[1].output[0].file_id',
  ],
  [
    'responses: file_search over vector stores',
    '/v1/responses',
    responses({
      tools: [
        { type: 'function', name: 'f', parameters: {} },
        { type: 'file_search', vector_store_ids: ['vs_abc'] },
      ],
    }),
    'tools[1].vector_store_ids',
  ],
  [
    'chat: a file part by id (vendor B)',
    '/v1/chat/completions',
    chat('b-5', [{ type: 'file', file: { file_id: 'file-abc' } }]),
    'messages[0].content[0].file.file_id',
  ],
  [
    'chat: a file part by id (vendor A, translated)',
    '/v1/chat/completions',
    chat('a-top-5', [
      { type: 'text', text: 'summarise' },
      { type: 'file', file: { file_id: 'file-abc' } },
    ]),
    'messages[0].content[1].file.file_id',
  ],
  ['messages: a container', '/v1/messages', messages({ container: 'container_abc' }), 'container'],
  [
    'messages: a container with skills',
    '/v1/messages',
    messages({ container: { skills: [{ type: 'custom', skill_id: 'skill_abc' }] } }),
    'container',
  ],
  [
    'messages: a document by file id',
    '/v1/messages',
    messages({ messages: user([{ type: 'document', source: fileSource }]) }),
    'messages[0].content[0].source.file_id',
  ],
  [
    'messages: an image by file id',
    '/v1/messages',
    messages({
      messages: user([
        { type: 'text', text: 'look' },
        { type: 'image', source: fileSource },
      ]),
    }),
    'messages[0].content[1].source.file_id',
  ],
  [
    "messages: a tool result's image by file id",
    '/v1/messages',
    messages({
      messages: [
        { role: 'user', content: 'look' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'shot', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: [{ type: 'image', source: fileSource }] }] },
      ],
    }),
    'messages[2].content[0].content[0].source.file_id',
  ],
  [
    "messages: a document's content block by file id",
    '/v1/messages',
    messages({ messages: user([{ type: 'document', source: { type: 'content', content: [{ type: 'image', source: fileSource }] } }]) }),
    'messages[0].content[0].source.content[0].source.file_id',
  ],
  [
    'messages: a container upload',
    '/v1/messages',
    messages({
      messages: user([
        { type: 'text', text: 'run it' },
        { type: 'container_upload', file_id: 'file_abc' },
      ]),
    }),
    'messages[0].content[1].file_id',
  ],
];

describe('references to vendor-side objects no wallet owns', () => {
  for (const [name, path, body, param] of refused) {
    it(`${name}: 400 naming ${param}, nothing held, charged or sent`, async () => {
      const sent = t.sim.received.length;
      const before = await t.balance();
      const res = await post(t, path, body, path === '/v1/messages' ? A_VERSION : {});
      const json = (await res.json()) as any;
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(res.headers.get('x-service-charged-nano')).toBeNull();
      if (path === '/v1/messages') {
        // The native error body names no param: the sentence does.
        expect(json.type).toBe('error');
        expect(json.error.type).toBe('invalid_request_error');
        expect(json.error.message.startsWith(`${param} is not accepted: the gateway keeps no `)).toBe(true);
      } else {
        expect(json.error.type).toBe('invalid_request_error');
        expect(json.error.param).toBe(param);
        expect(json.error.message).toMatch(/the gateway keeps no (files|vector stores|stored prompts) of its own/);
      }
      expect(json.error.message).toMatch(/Send |Omit it/);
      expect(t.sim.received.length).toBe(sent);
      expect(await t.balance()).toBe(before);
      expect(await t.held()).toBe(0n);
    });
  }
});

/** A door, the body, and what the vendor must have been sent of it. */
const inline: [string, string, Record<string, unknown>, (body: any) => unknown][] = [
  [
    'responses: an input_file with file_data',
    '/v1/responses',
    responses({
      input: user([
        { type: 'input_file', filename: 'a.pdf', file_data: PDF },
        { type: 'input_text', text: 'summarise' },
      ]),
    }),
    (b) => b.input[0].content[0].file_data,
  ],
  [
    'responses: an input_image by data URI',
    '/v1/responses',
    responses({
      input: user([
        { type: 'input_text', text: 'look' },
        { type: 'input_image', image_url: `data:image/png;base64,${PNG}` },
      ]),
    }),
    (b) => b.input[0].content[1].image_url,
  ],
  [
    'responses: a file_id of null beside file_data',
    '/v1/responses',
    responses({ input: user([{ type: 'input_file', filename: 'a.pdf', file_data: PDF, file_id: null }]) }),
    (b) => b.input[0].content[0].file_data,
  ],
  [
    'chat: a file part with file_data (vendor B)',
    '/v1/chat/completions',
    chat('b-5', [
      { type: 'text', text: 'summarise' },
      { type: 'file', file: { filename: 'a.pdf', file_data: PDF } },
    ]),
    (b) => b.messages[0].content[1].file.file_data,
  ],
  [
    'chat: a file part with file_data (vendor A, translated)',
    '/v1/chat/completions',
    chat('a-top-5', [
      { type: 'text', text: 'summarise' },
      { type: 'file', file: { filename: 'a.pdf', file_data: PDF } },
    ]),
    (b) => b.messages[0].content[1].source.type,
  ],
  [
    'messages: a document with a base64 source',
    '/v1/messages',
    messages({
      messages: user([{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF.split(',')[1] } }]),
    }),
    (b) => b.messages[0].content[0].source.data,
  ],
  [
    'messages: an image with a base64 source',
    '/v1/messages',
    messages({ messages: user([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }]) }),
    (b) => b.messages[0].content[0].source.data,
  ],
  [
    'messages: an image by URL',
    '/v1/messages',
    messages({ messages: user([{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }]) }),
    (b) => b.messages[0].content[0].source.url,
  ],
];

describe('the same content sent inline is forwarded', () => {
  for (const [name, path, body, sentOf] of inline) {
    it(name, async () => {
      const sent = t.sim.received.length;
      const res = await post(t, path, body, path === '/v1/messages' ? A_VERSION : {});
      expect(res.status, await res.text()).toBe(200);
      const got = t.sim.received.slice(sent).map((r) => r.body as any);
      expect(got).toHaveLength(1);
      expect(sentOf(got[0])).toBeTruthy();
    });
  }
});
