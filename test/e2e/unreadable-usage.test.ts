// A complete answer whose usage figure cannot be read is still work the vendor bills: the gateway charges an
// estimate (the whole request body as input, the answer's text as output), never zero and never a credit. That
// covers an answer without `usage` at all and one whose counts are not counts (negative, strings, missing where
// every answer carries them), on plain answers and on streams. The vendor here is a stub on loopback that
// answers correctly in every way but the usage it is told to send.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countTokens as o200kTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { createGateway, type RunningGateway } from '../../engine/gateway.ts';
import { TEST_NOW } from '../helpers/gateway.ts';
import { expectJournalAddsUp, walletView } from '../helpers/ledger.ts';
import { VENDORS } from '../helpers/vendors.ts';
import { A_VERSION, nano, PRICES } from './e2e.ts';

// About a thousand tokens of prose on a real tokenizer, in PIECES equal stream deltas.
const ANSWER_TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(96);
const PIECES = 8;
const IMAGE_BASE64 = 'A'.repeat(400_000); // an image's bytes: 100,000 tokens if it were text

/** What the stub puts in `usage` for the next call: undefined leaves it out. */
let vendorUsage: unknown;

function plainAnswer(path: string, model: string): object {
  const usage = vendorUsage === undefined ? {} : { usage: vendorUsage };
  if (path.endsWith('/v1/messages')) {
    return {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text: ANSWER_TEXT }],
      stop_reason: 'end_turn',
      ...usage,
    };
  }
  if (path.endsWith('/v1/images/generations')) return { created: 1, data: [{ b64_json: IMAGE_BASE64 }], ...usage };
  if (path.endsWith('/v1/responses')) {
    const output = [
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: ANSWER_TEXT, annotations: [] }],
      },
    ];
    return { id: 'resp_1', object: 'response', status: 'completed', model, output, ...usage };
  }
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: ANSWER_TEXT }, finish_reason: 'stop' }],
    ...usage,
  };
}

/** The same answer as the vendor's event stream, its text in PIECES deltas and the usage where each format carries it. */
function streamFrames(path: string, model: string): string[] {
  const piece = ANSWER_TEXT.slice(0, ANSWER_TEXT.length / PIECES);
  const frame = (data: object, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
  const pieces = (make: () => string) => Array.from({ length: PIECES }, make);
  const usage = (vendorUsage ?? {}) as Record<string, unknown>;
  if (path.endsWith('/v1/messages')) {
    const { output_tokens: out, ...start } = usage;
    return [
      frame(
        {
          type: 'message_start',
          message: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model,
            content: [],
            stop_reason: null,
            usage: { ...start, output_tokens: 1 },
          },
        },
        'message_start',
      ),
      frame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
      ...pieces(() => frame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }, 'content_block_delta')),
      frame({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
      frame({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: out } }, 'message_delta'),
      frame({ type: 'message_stop' }, 'message_stop'),
    ];
  }
  if (path.endsWith('/v1/responses')) {
    return [
      ...pieces(() => frame({ type: 'response.output_text.delta', delta: piece }, 'response.output_text.delta')),
      frame(
        { type: 'response.completed', response: { id: 'resp_1', status: 'completed', model, output: [], usage } },
        'response.completed',
      ),
    ];
  }
  const chunk = (rest: object) => frame({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model, ...rest });
  return [
    ...pieces(() => chunk({ choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })),
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
    chunk({ choices: [], usage }),
    'data: [DONE]\n\n',
  ];
}

function answer(req: IncomingMessage, res: ServerResponse, raw: string): void {
  const body = JSON.parse(raw) as { model: string; stream?: boolean };
  const path = req.url ?? '';
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(plainAnswer(path, body.model)));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(streamFrames(path, body.model).join(''));
}

let vendor: Server;
let gw: RunningGateway;
let url: string;
let walletId: string;
let apiKey: string;

beforeAll(async () => {
  vendor = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => answer(req, res, raw));
  });
  await new Promise<void>((r) => vendor.listen(0, '127.0.0.1', r));
  const vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
  const env: Record<string, string> = {
    GATEWAY_SIMULATE: '0',
    GATEWAY_DATA_DIR: 'memory://',
    GATEWAY_CONFIG_DIR: 'config',
    GATEWAY_CATALOG_DIR: 'catalog',
  };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = vendorUrl;
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  gw = await createGateway({ env, clock: fixedClock(TEST_NOW), logger: false, sweeper: false });
  url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  walletId = (await gw.ledger.createWallet({ credits: 100_000_000 })).id;
  apiKey = (await gw.keys.createApiKey(walletId, { name: 'test' })).key;
});
afterAll(async () => {
  await gw?.close();
  vendor?.close();
});

async function chargeFor(path: string, body: object, headers: Record<string, string> = {}): Promise<bigint> {
  const before = (await walletView(gw, walletId)).spendableNano;
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  if ((body as { stream?: boolean }).stream)
    expect(text, 'the stream reached the client').toContain(ANSWER_TEXT.slice(0, ANSWER_TEXT.length / PIECES));
  else if (!path.startsWith('/v1/images')) expect(text).toContain(ANSWER_TEXT);
  const after = await walletView(gw, walletId);
  expect(after.heldNano, 'a hold stayed').toBe(0n);
  await expectJournalAddsUp(gw.db, walletId);
  return before - after.spendableNano;
}

/**
 * At least the work's worth on a real tokenizer, and an estimate within 30% above it (the per-script bound of a
 * vendor whose tokenizer is not published errs above; ids, labels and keys count as text).
 */
function expectNear(charged: bigint, floor: bigint) {
  expect(charged >= floor, `charged ${charged}, the work is worth at least ${floor}`).toBe(true);
  expect(charged <= (floor * 13n) / 10n, `charged ${charged}, more than 30% over ${floor}`).toBe(true);
}

const prompt = 'Please read these notes. '.repeat(100); // about 500 input tokens
const CALLS = {
  chat: {
    path: '/v1/chat/completions',
    model: 'b-5',
    body: { model: 'b-5', messages: [{ role: 'user', content: prompt }], max_completion_tokens: 2000 },
    headers: {},
  },
  translated: {
    path: '/v1/chat/completions',
    model: 'a-top-5.5',
    body: { model: 'a-top-5.5', messages: [{ role: 'user', content: prompt }], max_tokens: 2000 },
    headers: {},
  },
  messages: {
    path: '/v1/messages',
    model: 'a-top-5.5',
    body: { model: 'a-top-5.5', max_tokens: 2000, messages: [{ role: 'user', content: prompt }] },
    headers: A_VERSION,
  },
  responses: { path: '/v1/responses', model: 'b-5', body: { model: 'b-5', input: prompt, max_output_tokens: 2000 }, headers: {} },
} as const;
type CallName = keyof typeof CALLS;

/** What the prompt and the answer cost the call's model on a real tokenizer: the least an estimate may charge. */
const floorOf = (name: CallName) => {
  const p = PRICES[CALLS[name].model];
  return nano(o200kTokens(ANSWER_TEXT), p.output) + nano(o200kTokens(prompt), p.input);
};

async function chargeWith(name: CallName, usage: unknown, stream: boolean): Promise<bigint> {
  vendorUsage = usage;
  const { path, body, headers } = CALLS[name];
  return chargeFor(path, stream ? { ...body, stream: true } : body, headers);
}

describe('an answer without usage', () => {
  for (const name of ['chat', 'translated', 'messages'] as const) {
    it(`on ${name} is charged at least its text, not zero`, async () => {
      expectNear(await chargeWith(name, undefined, false), floorOf(name));
    });
  }
});

describe('an image answer without usage', () => {
  const generate = (model: string) => {
    vendorUsage = undefined;
    return chargeFor('/v1/images/generations', { model, prompt: 'a lighthouse at dusk' });
  };

  it('from a vendor that charges per image is charged its image, not zero', async () => {
    expect(await generate('image-d-2')).toBe(60_000_000n); // image_charge 0.06 (catalog/media.yaml)
  });

  it('from a vendor that prices tokens is charged an image, not its base64 as text, and stays within the hold', async () => {
    const charged = await generate('image-b-1'); // input 5, output 30 per 1M; image_reservation 0.11 (catalog/media.yaml)
    expect(charged >= nano(1600, 30), `charged ${charged}`).toBe(true);
    expect(charged <= 110_000_000n, `charged ${charged}, above the hold`).toBe(true);
  });
});

/** Usage figures a vendor must never be taken at its word for, in each format's field names. */
const UNREADABLE: Record<'chat' | 'native' | 'responses', [string, object][]> = {
  chat: [
    ['negative counts', { prompt_tokens: -1_000_000, completion_tokens: -5, total_tokens: -1_000_005 }],
    ['counts as strings', { prompt_tokens: '600', completion_tokens: '1000', total_tokens: '1600' }],
    ['no prompt count', { completion_tokens: 1000, total_tokens: 1000 }],
    ['no completion count', { prompt_tokens: 600, total_tokens: 600 }],
    ['a null completion count', { prompt_tokens: 600, completion_tokens: null, total_tokens: 600 }],
    ['an empty figure', {}],
    ['a negative cached count', { prompt_tokens: 600, completion_tokens: 1000, prompt_tokens_details: { cached_tokens: -600 } }],
  ],
  native: [
    ['negative counts', { input_tokens: -1_000_000, output_tokens: -5 }],
    ['counts as strings', { input_tokens: '600', output_tokens: '1000' }],
    ['a negative cache read', { input_tokens: 600, output_tokens: 1000, cache_read_input_tokens: -1_000_000 }],
  ],
  responses: [
    ['negative counts', { input_tokens: -1_000_000, output_tokens: -5, total_tokens: 0 }],
    ['counts as strings', { input_tokens: '600', output_tokens: '1000' }],
  ],
};

const FORMAT_OF: Record<CallName, keyof typeof UNREADABLE> = {
  chat: 'chat',
  translated: 'native',
  messages: 'native',
  responses: 'responses',
};

describe('an answer whose usage cannot be read is charged an estimate, never less', () => {
  for (const name of Object.keys(CALLS) as CallName[]) {
    for (const stream of [false, true]) {
      for (const [what, usage] of UNREADABLE[FORMAT_OF[name]]) {
        it(`${name}${stream ? ', streamed' : ''}: ${what}`, async () => {
          expectNear(await chargeWith(name, usage, stream), floorOf(name));
        });
      }
    }
  }
});

describe('a readable usage figure is charged as reported, not estimated', () => {
  const READABLE = {
    chat: { prompt_tokens: 600, completion_tokens: 1000, total_tokens: 1600 },
    native: { input_tokens: 600, output_tokens: 1000 },
    responses: { input_tokens: 600, output_tokens: 1000, total_tokens: 1600 },
  };
  for (const name of Object.keys(CALLS) as CallName[]) {
    for (const stream of [false, true]) {
      it(`${name}${stream ? ', streamed' : ''}`, async () => {
        const p = PRICES[CALLS[name].model];
        expect(await chargeWith(name, READABLE[FORMAT_OF[name]], stream)).toBe(nano(600, p.input) + nano(1000, p.output));
      });
    }
  }
});
