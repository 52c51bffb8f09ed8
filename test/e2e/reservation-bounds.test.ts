// The reservation against a client who tries: it must cover everything the vendor will do for the body, so a
// call can never spend beyond the balance; a limit field it cannot trust is a 400 naming it before any charge;
// and it must stay small enough that a short one-token call fits a small wallet.
// Over loopback HTTP against an in-process gateway and its simulator; prices below are copied from
// catalog/*.yaml, not computed by the gateway's pricing code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { journalSum } from '../helpers/ledger.ts';
import { A_VERSION, nano, post, WEB_SEARCH_NANO } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

interface Client {
  walletId: string;
  as: TestGateway;
}

/** A wallet of `credits` with its own key, on the shared gateway. */
async function walletOf(credits: number): Promise<Client> {
  const wallet = await t.gw.ledger.createWallet({ credits });
  const { key } = await t.gw.keys.createApiKey(wallet.id, { name: `w${credits}` });
  return { walletId: wallet.id, as: { ...t, apiKey: key, walletId: wallet.id } };
}

const available = async (c: Client) => (await t.gw.ledger.balance(c.walletId)).availableNano;

/** Nothing held, and the journal adds up to the balance. */
async function expectSettledBooks(c: Client) {
  const balance = await t.gw.ledger.balance(c.walletId);
  expect(balance.reservedNano, 'a hold was left behind').toBe(0n);
  const journal = await journalSum(t.gw.db, c.walletId);
  expect(journal.availableNano).toBe(balance.availableNano);
  expect(journal.reservedNano).toBe(0n);
}

/** Every finished call of the wallet was charged no more than it held: the reservation bounded it. */
async function expectChargesWithinHolds(c: Client) {
  const rows = await t.gw.db.query<{ amount_nano: string; charged_nano: string | null; state: string }>(
    'SELECT amount_nano::text, charged_nano::text, state FROM reservations WHERE wallet_id = $1',
    [c.walletId],
  );
  for (const r of rows.rows) {
    if (r.state === 'settled') expect(BigInt(r.charged_nano ?? '0')).toBeLessThanOrEqual(BigInt(r.amount_nano));
  }
  return rows.rows;
}

const USER = (text: string) => [{ role: 'user', content: text }];

describe('the output bound is the largest limit field the vendor may honour', () => {
  // b-4.1: $2 / $8 per 1M tokens. 30,000 output tokens cost 240,000 credits; the wallet has 5,000.
  const LONG = 'x [[sim:long=20000]]';

  it.each([
    ['max_completion_tokens', { max_tokens: 1, max_completion_tokens: 30_000 }],
    ['max_tokens', { max_tokens: 30_000, max_completion_tokens: 1 }],
  ])('a small limit beside a large %s does not lower the hold, and the 402 names it', async (field, limits) => {
    const c = await walletOf(5_000);
    const sent = t.sim.received.length;
    const res = await post(c.as, '/v1/chat/completions', { model: 'b-4.1', messages: USER(LONG), ...limits });
    const text = await res.text();
    expect(res.status, text).toBe(402);
    const err = JSON.parse(text);
    expect(err.error.type).toBe('insufficient_credit');
    // The advice names the field that drives the hold, as the client sent it.
    expect(err.error.message).toContain(`lower ${field}`);
    expect(t.sim.received.length, 'a vendor was called').toBe(sent);
    expect(await available(c)).toBe(5_000_000n);
    await expectSettledBooks(c);
  });

  it.each([
    ['/v1/chat/completions', { model: 'b-4.1', max_output_tokens: 1, messages: USER(LONG) }],
    ['/v1/responses', { model: 'b-4.1', max_tokens: 1, input: LONG }],
  ])('%s: a limit field that wire format ignores lowers nothing (the gateway lowers the default itself)', async (path, body) => {
    // Held at the model maximum (32,768 for b-4.1), which the wallet cannot cover: as for a body with no limit at
    // all, the gateway writes the largest output limit that fits, in the door's own field, and says so.
    const c = await walletOf(5_000);
    const res = await post(c.as, path, body);
    expect(res.status, await res.clone().text()).toBe(200);
    const written = Number(res.headers.get('x-service-max-tokens'));
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(32768);
    await res.json();
    await expectChargesWithinHolds(c);
    await expectSettledBooks(c);
  });

  it('with one honest limit the same wallet is served, charged exactly the usage, within the hold', async () => {
    const c = await walletOf(5_000);
    const res = await post(c.as, '/v1/chat/completions', { model: 'b-4.1', max_completion_tokens: 100, messages: USER(LONG) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.usage.completion_tokens).toBeLessThanOrEqual(100);
    const cost = nano(body.usage.prompt_tokens, 2) + nano(body.usage.completion_tokens, 8);
    expect(5_000_000n - (await available(c))).toBe(cost);
    await expectChargesWithinHolds(c);
    await expectSettledBooks(c);
  });
});

describe('a limit field that is not a positive integer: 400 naming it, before any charge', () => {
  const cases: [string, string, Record<string, unknown>, string, Record<string, string>?][] = [];
  const chat = (model: string, extra: Record<string, unknown>, param: string) =>
    cases.push(['/v1/chat/completions', model, { model, messages: USER('hi'), ...extra }, param]);
  for (const bad of [0, -1, 2.5, '100', true]) {
    chat('b-4.1', { max_tokens: bad }, 'max_tokens');
    chat('b-4.1', { max_completion_tokens: bad }, 'max_completion_tokens');
    chat('b-4.1', { n: bad }, 'n');
  }
  chat('b-4.1', { n: 9 }, 'n'); // above the configured cap (config/billing.yaml reservation.max_choices)
  chat('a-top-5.5', { n: 2 }, 'n'); // vendor A returns one choice: the translation refuses it
  chat('a-top-5.5', { max_completion_tokens: 0 }, 'max_completion_tokens');
  const WEB = { type: 'web_search_20250305', name: 'web_search' };
  for (const bad of [-1, 0, 1.5, '3']) {
    cases.push([
      '/v1/messages',
      'a-top-5.5',
      { model: 'a-top-5.5', max_tokens: 100, tools: [{ ...WEB, max_uses: bad }], messages: USER('search [[sim:web_search=5]]') },
      'tools[0].max_uses',
      A_VERSION,
    ]);
  }
  for (const bad of [0, -1, 3.5]) {
    cases.push(['/v1/messages', 'a-top-5.5', { model: 'a-top-5.5', max_tokens: bad, messages: USER('hi') }, 'max_tokens', A_VERSION]);
    cases.push(['/v1/responses', 'b-5', { model: 'b-5', input: 'hi', max_output_tokens: bad }, 'max_output_tokens']);
  }

  it.each(cases)('%s %s: %j → 400 naming %s', async (path, _model, body, param, headers) => {
    const c = await walletOf(1_000_000);
    const before = await available(c);
    const sent = t.sim.received.length;
    const res = await post(c.as, path, body, headers ?? {});
    const text = await res.text();
    expect(res.status, text).toBe(400);
    const err = JSON.parse(text);
    if (path === '/v1/messages') {
      expect(err.type).toBe('error');
    } else {
      expect(err.error.param).toBe(param);
    }
    expect(err.error.type).toBe('invalid_request_error');
    expect(err.error.message).toContain(param);
    expect(t.sim.received.length, 'a vendor was called').toBe(sent);
    expect(await available(c)).toBe(before);
    await expectSettledBooks(c);
  });

  it('null limits are the same as none: served, and held at the model maximum', async () => {
    const res = await post(t, '/v1/chat/completions', { model: 'b-4.1', messages: USER('hi'), max_tokens: null, n: null });
    expect(res.status).toBe(200);
    await res.json();
  });

  it('30 parallel calls with max_uses -1 on a 10,000-credit wallet: every one refused, nothing moves', async () => {
    const c = await walletOf(10_000);
    const sent = t.sim.received.length;
    const body = {
      model: 'a-top-5.5',
      max_tokens: 100,
      tools: [{ ...WEB, max_uses: -1 }],
      messages: USER('search [[sim:web_search=5]]'),
    };
    const answers = await Promise.all(Array.from({ length: 30 }, () => post(c.as, '/v1/messages', body, A_VERSION)));
    expect(answers.map((r) => r.status)).toEqual(Array(30).fill(400));
    expect(t.sim.received.length).toBe(sent);
    expect(await available(c)).toBe(10_000_000n);
    await expectSettledBooks(c);
  });

  it('30 parallel searching calls with an honest max_uses never spend beyond the balance', async () => {
    // a-high-5.5: $3 / $15 per 1M tokens, $0.01 per search. Each call holds 2 searches, their result pages
    // (2 × 20,000 input tokens) and its token bound: about $0.14, so a $1 wallet serves a few of the 30.
    const c = await walletOf(1_000_000);
    const body = {
      model: 'a-high-5.5',
      max_tokens: 50,
      tools: [{ ...WEB, max_uses: 2 }],
      messages: USER('search [[sim:web_search=2]]'),
    };
    const answers = await Promise.all(Array.from({ length: 30 }, () => post(c.as, '/v1/messages', body, A_VERSION)));
    let spent = 0n;
    let served = 0;
    for (const res of answers) {
      const answer = (await res.json()) as any;
      if (res.status === 402) continue;
      expect(res.status).toBe(200);
      served++;
      const u = answer.usage;
      spent += nano(u.input_tokens, 3) + nano(u.output_tokens, 15) + BigInt(u.server_tool_use.web_search_requests) * WEB_SEARCH_NANO;
    }
    expect(served).toBeGreaterThan(0);
    expect(served).toBeLessThan(30);
    // What the vendor did was charged in full: nothing absorbed by the gateway.
    expect(1_000_000_000n - (await available(c))).toBe(spent);
    expect(await available(c)).toBeGreaterThanOrEqual(0n);
    await expectChargesWithinHolds(c);
    await expectSettledBooks(c);
  });
});

describe('n on the chat door multiplies the hold', () => {
  // b-4.1 at $8 per 1M output tokens: 1,000 output tokens are 8,000 credits per choice.
  const body = (n: number) => ({ model: 'b-4.1', max_completion_tokens: 1000, n, messages: USER('hi') });

  it('a wallet that covers one choice is refused two, naming n; one choice is served', async () => {
    const c = await walletOf(12_000);
    const sent = t.sim.received.length;
    const two = await post(c.as, '/v1/chat/completions', body(2));
    expect(two.status).toBe(402);
    expect(((await two.json()) as any).error.message).toContain('n (2)');
    expect(t.sim.received.length).toBe(sent);
    expect(await available(c)).toBe(12_000_000n);
    const one = await post(c.as, '/v1/chat/completions', body(1));
    expect(one.status).toBe(200);
    await one.json();
    await expectChargesWithinHolds(c);
    await expectSettledBooks(c);
  });

  it('n up to the cap is sent on unchanged', async () => {
    const res = await post(t, '/v1/chat/completions', body(8));
    expect(res.status).toBe(200);
    await res.json();
    expect(t.sim.received.at(-1)?.body).toMatchObject({ n: 8 });
  });
});

describe('a 2,000-credit wallet makes a one-token call to each vendor’s top text model', () => {
  // The most expensive text model on sale for the door, per vendor (catalog/*.yaml, USD per 1M tokens):
  //   A a-top-5 15/75 (chat and messages); B b-5.5 and b-6 5/30 (chat; on responses the pro models need
  //   at least 16 output tokens by the vendor's rule, 2,880 credits at $180, so b-6 with 16 is taken there);
  //   C c-pro-3-preview 2/12; D d-4 3/15; E e-open-405b 3/3.
  const cases: [string, string, Record<string, unknown>, [number, number], Record<string, string>?][] = [
    ['/v1/chat/completions', 'a-top-5', { max_tokens: 1, messages: USER('hi there') }, [15, 75]],
    ['/v1/messages', 'a-top-5', { max_tokens: 1, messages: USER('hi there') }, [15, 75], A_VERSION],
    ['/v1/chat/completions', 'b-5.5', { max_completion_tokens: 1, messages: USER('hi there') }, [5, 30]],
    ['/v1/chat/completions', 'b-6', { max_completion_tokens: 1, messages: USER('hi there') }, [5, 30]],
    ['/v1/responses', 'b-6', { max_output_tokens: 16, input: 'hi there' }, [5, 30]],
    ['/v1/chat/completions', 'c-pro-3-preview', { max_tokens: 1, messages: USER('hi there') }, [2, 12]],
    ['/v1/chat/completions', 'd-4', { max_tokens: 1, messages: USER('hi there') }, [3, 15]],
    ['/v1/chat/completions', 'e-open-405b', { max_tokens: 1, messages: USER('hi there') }, [3, 3]],
  ];

  it.each(cases)('%s %s', async (path, model, body, [inPrice, outPrice], headers) => {
    const c = await walletOf(2_000);
    const res = await post(c.as, path, { model, ...body }, headers ?? {});
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const u = JSON.parse(text).usage;
    const input = u.prompt_tokens ?? u.input_tokens;
    const output = u.completion_tokens ?? u.output_tokens;
    expect(2_000_000n - (await available(c))).toBe(nano(input, inPrice) + nano(output, outPrice));
    await expectChargesWithinHolds(c);
    await expectSettledBooks(c);
  });
});

describe('the 402 advice', () => {
  it('without any limit sent the call is held at the output the wallet can pay, and the answer names it', async () => {
    const c = await walletOf(2_000);
    const res = await post(c.as, '/v1/chat/completions', { model: 'b-6', messages: USER('hi') });
    expect(res.status).toBe(200);
    const written = Number(res.headers.get('x-service-max-tokens'));
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(128_000); // b-6's max_output, held when no limit is sent and it fits
    await res.json();
  });

  it("with the model's whole output sent as the limit it names the limit to lower", async () => {
    const c = await walletOf(2_000);
    const res = await post(c.as, '/v1/chat/completions', { model: 'b-6', max_completion_tokens: 128_000, messages: USER('hi') });
    expect(res.status).toBe(402);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(((await res.json()) as any).error.message).toContain('lower max_completion_tokens (128000)');
  });

  it('names the limit as the client sent it, though the translation renamed it for vendor A', async () => {
    const c = await walletOf(20_000);
    const res = await post(c.as, '/v1/chat/completions', { model: 'a-top-5.5', max_completion_tokens: 64_000, messages: USER('hi') });
    expect(res.status).toBe(402);
    expect(((await res.json()) as any).error.message).toContain('lower max_completion_tokens (64000) to lower the reservation');
  });

  it('a door with no output limit to lower advises a top-up only', async () => {
    const c = await walletOf(1);
    const res = await post(c.as, '/v1/images/generations', { model: 'image-b-1', prompt: 'x' });
    expect(res.status).toBe(402);
    const message = ((await res.json()) as any).error.message as string;
    expect(message).toMatch(/Top up\.$/);
    expect(message).not.toContain('max_tokens');
  });
});
