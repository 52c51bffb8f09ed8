// A complete answer that arrives without a usage figure is still work the vendor bills: the gateway charges an
// estimate (the whole request body as input, the answer's text as output), never zero. The vendor here is a
// stub on loopback that answers correctly in every way but leaves `usage` out.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway, type RunningGateway } from '../../engine/gateway.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import { VENDORS } from '../../engine/core/types.ts';
import { TEST_NOW } from '../helpers/gateway.ts';
import { A_VERSION, PRICES, nano } from './e2e.ts';

const ANSWER_TEXT = 'x'.repeat(4000); // 1,000 tokens at four characters each

function answerWithoutUsage(path: string, model: string): object {
  if (path.endsWith('/v1/messages')) {
    return { id: 'msg_1', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: ANSWER_TEXT }], stop_reason: 'end_turn' };
  }
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: ANSWER_TEXT }, finish_reason: 'stop' }],
  };
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
    req.on('end', () => {
      const model = (JSON.parse(raw) as { model: string }).model;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answerWithoutUsage(req.url ?? '', model)));
    });
  });
  await new Promise<void>((r) => vendor.listen(0, '127.0.0.1', r));
  const vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}`;
  const env: Record<string, string> = { GATEWAY_SIMULATE: '0', GATEWAY_DATA_DIR: 'memory://', GATEWAY_CONFIG_DIR: 'config', GATEWAY_CATALOG_DIR: 'catalog' };
  for (const v of VENDORS) {
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_URLS`] = vendorUrl;
    env[`GATEWAY_VENDOR_${v.toUpperCase()}_KEY`] = 'secret';
  }
  gw = await createGateway({ env, clock: fixedClock(TEST_NOW), logger: false, sweeper: false });
  url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  walletId = (await gw.ledger.createWallet({ credits: 10_000_000 })).id;
  apiKey = (await gw.keys.createApiKey(walletId, { name: 'test' })).key;
});
afterAll(async () => {
  await gw?.close();
  vendor?.close();
});

async function chargeFor(path: string, body: object, headers: Record<string, string> = {}): Promise<bigint> {
  const before = (await gw.ledger.balance(walletId)).availableNano;
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.text();
  const after = await gw.ledger.balance(walletId);
  expect(after.reservedNano, 'a hold stayed').toBe(0n);
  const journal = await gw.ledger.journalSum(walletId);
  expect(journal.availableNano).toBe(after.availableNano);
  return before - after.availableNano;
}

/** At least the work's worth, and an estimate that leans only a little high (ids and labels count as text). */
function expectNear(charged: bigint, floor: bigint) {
  expect(charged >= floor, `charged ${charged}, the work is worth at least ${floor}`).toBe(true);
  expect(charged <= (floor * 11n) / 10n, `charged ${charged}, more than 10% over ${floor}`).toBe(true);
}

describe('an answer without usage', () => {
  const prompt = 'p'.repeat(2000); // at least 500 input tokens

  it('on the chat door (vendor B passthrough) is charged at least its text, not zero', async () => {
    const charged = await chargeFor('/v1/chat/completions', { model: 'b-5', messages: [{ role: 'user', content: prompt }], max_completion_tokens: 2000 });
    const floor = nano(1000, PRICES['b-5'].output) + nano(500, PRICES['b-5'].input);
    expectNear(charged, floor);
  });

  it('on the chat door translated to vendor A is charged at least its text', async () => {
    const charged = await chargeFor('/v1/chat/completions', { model: 'a-top-5.5', messages: [{ role: 'user', content: prompt }], max_tokens: 2000 });
    const floor = nano(1000, PRICES['a-top-5.5'].output) + nano(500, PRICES['a-top-5.5'].input);
    expectNear(charged, floor);
  });

  it('on the messages door is charged at least its text', async () => {
    const body = { model: 'a-top-5.5', max_tokens: 2000, messages: [{ role: 'user', content: prompt }] };
    const charged = await chargeFor('/v1/messages', body, A_VERSION);
    const floor = nano(1000, PRICES['a-top-5.5'].output) + nano(500, PRICES['a-top-5.5'].input);
    expectNear(charged, floor);
  });
});
