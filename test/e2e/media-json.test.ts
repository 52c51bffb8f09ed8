// The JSON media doors on the shared pipeline: images, speech, embeddings, moderations — billed as the
// spec prices them, with what each vendor received checked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { post } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

async function charged(run: () => Promise<Response>): Promise<{ res: Response; nano: bigint }> {
  const before = await t.balance();
  const res = await run();
  if (res.headers.get('content-type')?.includes('json')) await res.clone().json();
  else await res.clone().arrayBuffer();
  return { res, nano: before - (await t.balance()) };
}

describe('images', () => {
  it('vendor D: size is never sent, the vendor charge per image is debited exactly', async () => {
    const n = t.received('d').length;
    const { res, nano } = await charged(() =>
      post(t, '/v1/images/generations', { model: 'image-d-2', prompt: 'a cat', size: '1024x1024' }),
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(typeof body.data[0].b64_json).toBe('string');
    const sent = t.received('d').slice(n);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body).not.toHaveProperty('size');
    expect(nano).toBe(60_000_000n); // $0.06
  });

  it('vendor B: token usage at the image model prices; size passed through', async () => {
    const n = t.received('b').length;
    const { res, nano } = await charged(() =>
      post(t, '/v1/images/generations', { model: 'image-b-1', prompt: 'a dog', size: '1024x1024' }),
    );
    expect(res.status).toBe(200);
    const sent = t.received('b').slice(n)[0]!;
    expect(sent.body).toMatchObject({ size: '1024x1024' });
    const usage = ((await res.json()) as any).usage;
    expect(nano).toBe(BigInt(usage.input_tokens * 5000 + usage.output_tokens * 30000));
  });

  it('n above 1 is refused before any vendor call', async () => {
    const n = t.sim.received.length;
    const res = await post(t, '/v1/images/generations', { model: 'image-b-1', prompt: 'x', n: 2 });
    expect(res.status).toBe(400);
    expect(t.sim.received.length).toBe(n);
  });

  it('402 when the balance is below the reservation even though some balance remains', async () => {
    const w = await t.gw.ledger.createWallet({ credits: 100_000 }); // $0.10 < $0.11
    const { key } = await t.gw.keys.createApiKey(w.id);
    const res = await fetch(`${t.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'image-b-1', prompt: 'x' }),
    });
    expect(res.status).toBe(402);
    expect(((await res.json()) as any).error.type).toBe('insufficient_credit');
  });
});

describe('speech', () => {
  it('answers raw audio, charges characters × price, and says so in headers', async () => {
    const input = '안녕하세요, world!'; // 16 characters (code points), more bytes
    const { res, nano } = await charged(() => post(t, '/v1/audio/speech', { model: 'tts-1-hd', input, voice: 'alloy' }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(res.headers.get('x-service-characters')).toBe(String([...input].length));
    const expected = BigInt([...input].length * 30_000); // $30 per 1M characters
    expect(res.headers.get('x-service-charged-nano')).toBe(String(expected));
    expect(nano).toBe(expected);
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  it('a text model on the speech door gives 400 naming the chat door', async () => {
    const res = await post(t, '/v1/audio/speech', { model: 'b-5', input: 'hi', voice: 'alloy' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toContain('/v1/chat/completions');
  });
});

describe('embeddings and moderations', () => {
  it('embeddings are billed for the input tokens only', async () => {
    const { res, nano } = await charged(() => post(t, '/v1/embeddings', { model: 'embedding-c-2', input: ['one text', 'two texts'] }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.data).toHaveLength(2);
    expect(nano).toBe(BigInt(body.usage.prompt_tokens * 200)); // $0.20 per 1M
  });

  it('moderations are free, fill in the default model, and work with a balance of 0', async () => {
    const w = await t.gw.ledger.createWallet({});
    const { key } = await t.gw.keys.createApiKey(w.id);
    const n = t.received('b').length;
    const res = await fetch(`${t.url}/v1/moderations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'hello [[sim:flag]]' }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.results[0].flagged).toBe(true);
    expect(t.received('b').slice(n)[0]!.body).toMatchObject({ model: 'omni-moderation-latest' });
    expect((await t.gw.ledger.balance(w.id)).availableNano).toBe(0n);
  });
});
