// A call that sends no output limit is held for the model's whole output, which a small wallet or a key with a
// small monthly limit cannot cover: the gateway then sends the vendor the largest output limit that fits and says
// so in `x-service-max-tokens`. A limit the client sent is held as sent, and a refusal waiting cannot lift tells
// the official SDKs not to retry.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isOnSale } from '../../engine/catalog/model-lookup.ts';
import type { ModelEntry, VendorId } from '../../engine/core/types.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { VENDORS } from '../helpers/vendors.ts';

let t: TestGateway;
/** Keys of the test gateway: one with a 500,000-credit monthly limit, one of a $10 wallet (the development wallet's size), one of a 1-credit wallet. */
let limited: string;
let tenDollars: string;
let poor: string;

beforeAll(async () => {
  t = await startTestGateway();
  limited = (await t.gw.keys.createApiKey(t.walletId, { name: 'class', monthlyLimitCredits: 500_000 })).key;
  tenDollars = (await t.gw.keys.createApiKey((await t.gw.ledger.createWallet({ credits: 10_000_000 })).id, { name: 'dev' })).key;
  poor = (await t.gw.keys.createApiKey((await t.gw.ledger.createWallet({ credits: 1 })).id, { name: 'poor' })).key;
});
afterAll(() => t?.close());

/** Each vendor's dearest text model on sale (by output price), and the door a default call to it takes. */
function dearest(vendor: VendorId): { model: ModelEntry; door: 'chat' | 'responses' } {
  const now = new Date(TEST_NOW);
  const models = [...t.gw.runtime.snapshot().catalog.models.values()].filter(
    (m) => m.vendor === vendor && m.kind === 'text' && isOnSale(m, now) && (m.max_output ?? 0) > 0 && (m.pricing.output ?? 0) > 0,
  );
  const model = models.sort((a, b) => (b.pricing.output ?? 0) - (a.pricing.output ?? 0))[0]!;
  return { model, door: !model.doors || model.doors.includes('chat') ? 'chat' : 'responses' };
}

/** An OpenAI client counting the requests it sends (its retries included), with the SDK's default retries. */
function countingOpenAI(apiKey: string): { client: OpenAI; sent: () => number } {
  let sent = 0;
  const client = new OpenAI({
    apiKey,
    baseURL: `${t.url}/v1`,
    fetch: (url, init) => {
      sent++;
      return fetch(url, init);
    },
  });
  return { client, sent: () => sent };
}

/** The body the vendor received for the last call. */
const lastVendorBody = () => t.sim.received.at(-1)!.body as Record<string, unknown>;

/** The calls of the issue that were refused before (429 at 0 used; the $10 wallet's 402 on b-pro-5.5), and more the catalog's prices make too dear. */
const mustLower = new Set([
  'a a key with a 500,000-credit monthly limit',
  'b a key with a 500,000-credit monthly limit',
  'c a key with a 500,000-credit monthly limit',
  'd a key with a 500,000-credit monthly limit',
  'b a $10 wallet',
]);

describe('a default call', () => {
  for (const vendor of VENDORS) {
    for (const [who, key] of [
      ['a key with a 500,000-credit monthly limit', () => limited],
      ['a $10 wallet', () => tenDollars],
    ] as const) {
      it(`vendor ${vendor.toUpperCase()}'s dearest text model, by ${who}, through the OpenAI SDK: answered, with the largest output limit that fits when the default does not`, async () => {
        const { model, door } = dearest(vendor);
        const openai = new OpenAI({ apiKey: key(), baseURL: `${t.url}/v1`, maxRetries: 0 });
        const { response } =
          door === 'chat'
            ? await openai.chat.completions.create({ model: model.id, messages: [{ role: 'user', content: 'Say hi.' }] }).withResponse()
            : await openai.responses.create({ model: model.id, input: 'Say hi.' }).withResponse();
        expect(response.status).toBe(200);
        const header = response.headers.get('x-service-max-tokens');
        const body = lastVendorBody();
        if (mustLower.has(`${vendor} ${who}`)) expect(header).not.toBeNull();
        if (header === null) return; // the default fitted: sent as the chain made it
        const written = Number(header);
        expect(written).toBeGreaterThanOrEqual(1);
        expect(written).toBeLessThan(model.max_output!);
        const field =
          vendor === 'a' || vendor === 'e' ? 'max_tokens' : door === 'responses' ? 'max_output_tokens' : 'max_completion_tokens';
        expect(body[field]).toBe(written);
        for (const other of ['max_tokens', 'max_completion_tokens', 'max_output_tokens'].filter((f) => f !== field))
          expect(body[other]).toBeUndefined();
      });
    }
  }

  it("the Anthropic SDK on vendor A's dearest model with the limit it always sends: held as sent, nothing written", async () => {
    const { model } = dearest('a');
    const client = new Anthropic({ apiKey: limited, baseURL: t.url, maxRetries: 0 });
    const { response } = await client.messages
      .create({ model: model.id, max_tokens: 1024, messages: [{ role: 'user', content: 'Say hi.' }] })
      .withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-service-max-tokens')).toBeNull();
    expect(lastVendorBody().max_tokens).toBe(1024);
  });

  it("streams too: the header is on the stream's head", async () => {
    const { model } = dearest('b');
    const res = await fetch(`${t.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenDollars}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: model.id, input: 'Say hi.', stream: true }),
    });
    expect(res.status).toBe(200);
    expect(Number(res.headers.get('x-service-max-tokens'))).toBeGreaterThan(0);
    await res.text();
  });

  it('vendor A on the chat door keeps 8192 when it fits, and says nothing', async () => {
    const { model } = dearest('a');
    const openai = new OpenAI({ apiKey: t.apiKey, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const { response } = await openai.chat.completions
      .create({ model: model.id, messages: [{ role: 'user', content: 'Say hi.' }] })
      .withResponse();
    expect(response.headers.get('x-service-max-tokens')).toBeNull();
    expect(lastVendorBody().max_tokens).toBe(8192);
  });
});

describe('refusals waiting cannot lift', () => {
  it('a limit the client sent is held as sent: 429 past the monthly limit, and the SDK does not retry it', async () => {
    const { model } = dearest('b');
    const { client, sent } = countingOpenAI(limited);
    const err = await client.responses
      .create({ model: model.id, input: 'Say hi.', max_output_tokens: model.max_output! })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((err as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
    expect(sent()).toBe(1);
  });

  it('a wallet that cannot pay even one output token: 402, and the SDK does not retry it', async () => {
    const { client, sent } = countingOpenAI(poor);
    const err = await client.chat.completions
      .create({ model: 'b-4.1-mini', messages: [{ role: 'user', content: 'Say hi.' }] })
      .catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((err as InstanceType<typeof OpenAI.APIError>).headers?.get('x-should-retry')).toBe('false');
    expect(sent()).toBe(1);
  });

  it("a 402 that the wallet's own calls in flight cause says to retry soon, and the retry is served", async () => {
    const wallet = await t.gw.ledger.createWallet({ credits: 80_000 }); // one call of b-4.1-mini's whole output (52,429 credits) fits, two do not
    const key = (await t.gw.keys.createApiKey(wallet.id, { name: 'burst' })).key;
    const call = (content: string) =>
      fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'b-4.1-mini', max_completion_tokens: 32_768, messages: [{ role: 'user', content }] }),
      });
    // The first call holds most of the wallet while the vendor takes its time; the second does not fit beside it.
    t.sim.inject('b0', { kind: 'delay', ms: 1_500 });
    const first = call('first');
    await new Promise((r) => setTimeout(r, 400));
    const second = await call('second');
    expect(second.status).toBe(402);
    expect(second.headers.get('x-should-retry')).toBeNull();
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await second.json()) as any).error.message).toContain('calls in progress hold');
    expect((await first).status).toBe(200);
    expect((await call('second again')).status).toBe(200);
  });
});
