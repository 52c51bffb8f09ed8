// Hostile input at every door, the key doors and the admin API (property-based, fast-check): wrong types,
// negative, fractional and huge numbers, NUL bytes and other unicode edge cases, duplicate keys, deep
// nesting, broken JSON and oversized bodies. A valid body with one field made hostile may still be a valid
// call (2xx); anything else is a 4xx in the door's error shape, with nothing charged and nothing held.
// A body that is broken as a whole (nesting past the limit, too big, not JSON) is always a 4xx.
// Prints how many cases ran (FUZZ_RUNS sets the runs per property, default 40).

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { walletView } from '../helpers/ledger.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const BODY_LIMIT = 256 * 1024;

let tree: TempTree;
let pg: TestPostgres | null = null;
let t: TestGateway;
const tally = { cases: 0, ok: 0, refused: 0 };
beforeAll(async () => {
  tree = tempCatalogTree();
  // A small body limit, so an oversized body is cheap to send.
  tree.edit('config/limits.yaml', (s) => s.replace(/body_limit_bytes: \d+/, `body_limit_bytes: ${BODY_LIMIT}`));
  pg = postgresAvailability.ok ? await openTestPostgres() : null;
  t = await startTestGateway({ dirs: tree, env: pg ? { DATABASE_URL: pg.url } : {} });
});
afterAll(async () => {
  console.log(`fuzz-hostile: ${tally.cases} cases ran: ${tally.ok} answered 2xx, ${tally.refused} refused with a 4xx`);
  await t?.close();
  await pg?.cleanup();
  tree?.remove();
});

// ---------- hostile values ----------

const unicodeEdge = fc.constantFrom(
  'a\u0000b', // NUL
  '\u0000',
  '\ud800', // lone high surrogate
  'x\udfffy', // lone low surrogate
  '\u202eevil', // right-to-left override
  '\ufeffbom',
  'e\u0301\u0301\u0301', // stacked combining marks
  '👩‍👩‍👧‍👦',
  '\u2028\u2029',
  '\uffff\ufffe',
  '',
  ' ',
  'x'.repeat(20_000),
);
/** Text holding half of a surrogate pair alone, at any place: never storable, never valid Unicode. */
const loneSurrogateText = fc
  .tuple(
    fc.string({ maxLength: 8 }),
    fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\udc00\ud800'),
    fc.string({ maxLength: 8 }),
    fc.constantFrom('', 'https://example.com/', 'data:image/png;base64,'),
  )
  .map(([a, lone, b, prefix]) => `${prefix}${a}${lone}${b}`);
const hostileNumber = fc.oneof(
  fc.integer({ min: -1_000_000, max: -1 }),
  fc.double({ noInteger: true, noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-0, 0.5, 1e308, -1e308, 2 ** 53 + 1, 2 ** 63, Number.MAX_SAFE_INTEGER, 1e21),
);
const wrongType = fc.oneof(
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
  fc.string({ maxLength: 10 }),
);
const hostile = fc.oneof(unicodeEdge, hostileNumber, wrongType, fc.constantFrom('1e3', '0x10', '-1', '1.5', 'NaN', 'Infinity'));

/** Raw bodies broken as a whole: never valid, always a 4xx. */
function brokenBody(valid: object): fc.Arbitrary<{ what: string; text: string }> {
  const json = JSON.stringify(valid);
  return fc.oneof(
    fc
      .integer({ min: 65, max: 3000 })
      .map((depth) => ({ what: `nested ${depth} deep`, text: `${json.slice(0, -1)},"extra":${'['.repeat(depth)}${']'.repeat(depth)}}` })),
    fc.constant({ what: 'oversized', text: `${json.slice(0, -1)},"pad":"${'p'.repeat(BODY_LIMIT + 10)}"}` }),
    fc.integer({ min: 1, max: json.length - 1 }).map((n) => ({ what: `cut at ${n}`, text: json.slice(0, n) })),
    fc.constant({ what: 'raw NUL in the JSON text', text: json.replace('{', '{\u0000') }),
    fc.constant({ what: 'not an object', text: JSON.stringify([valid]) }),
    fc.constant({ what: 'a bare string', text: '"hello"' }),
  );
}

/** A valid body's text with one key given twice (the second occurrence a hostile value). */
const withDuplicateKey = (valid: Record<string, unknown>, key: string, value: unknown) => {
  const json = JSON.stringify(valid);
  return `{${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'},${json.slice(1)}`;
};

// ---------- the doors ----------

type Shape = 'chat' | 'messages';
/** A door with a valid body; `stored` names its other fields whose text is kept (a video's starting image). */
const DOORS: {
  path: string;
  shape: Shape;
  headers?: Record<string, string>;
  body: Record<string, unknown>;
  stored?: string[];
  asyncJob?: boolean;
}[] = [
  {
    path: '/v1/chat/completions',
    shape: 'chat',
    body: { model: 'b-5', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 50 },
  },
  {
    path: '/v1/chat/completions',
    shape: 'chat',
    body: { model: 'a-top-5.5', messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 },
  },
  {
    path: '/v1/messages',
    shape: 'messages',
    headers: { 'anthropic-version': '2023-06-01' },
    body: { model: 'a-top-5.5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
  },
  { path: '/v1/responses', shape: 'chat', body: { model: 'b-5', input: 'hi', max_output_tokens: 50 } },
  { path: '/v1/embeddings', shape: 'chat', body: { model: 'text-embedding-3-small', input: 'hi' } },
  { path: '/v1/moderations', shape: 'chat', body: { model: 'omni-moderation-latest', input: 'hi' } },
  { path: '/v1/audio/speech', shape: 'chat', body: { model: 'tts-1', input: 'hi', voice: 'alloy' } },
  { path: '/v1/images/generations', shape: 'chat', body: { model: 'image-b-1', prompt: 'a cat' } },
  {
    path: '/v1/videos',
    shape: 'chat',
    body: { model: 'video-d-1', prompt: 'a cat', seconds: '4' },
    stored: ['image_url', 'input_reference', 'size', 'resolution', 'aspect_ratio'],
    asyncJob: true,
  },
];

function expectShape(shape: Shape, status: number, text: string, context: string) {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${context}: ${status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  if (shape === 'messages') {
    expect(body.type, context).toBe('error');
    expect(typeof body.error?.type, context).toBe('string');
    expect(typeof body.error?.message, context).toBe('string');
  } else {
    expect(typeof body.error?.type, context).toBe('string');
    expect(typeof body.error?.message, context).toBe('string');
  }
}

async function money(walletId = t.walletId) {
  const w = await walletView(t.gw, walletId);
  return { available: w.spendableNano, reserved: w.heldNano };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Sends one case; a 4xx must be in the door's shape and leave the wallet as it was. Returns the status. */
async function sendCase(
  door: { path: string; shape: Shape; headers?: Record<string, string>; asyncJob?: boolean },
  text: string | Blob,
  context: string,
  opts: { method?: string; auth?: string; expectParam?: string } = {},
): Promise<number> {
  // A video job settles in the background long after its answer: each such case gets a wallet of its own,
  // so no earlier job's money moves while this case is checked.
  let walletId = t.walletId;
  let auth = opts.auth ?? `Bearer ${t.apiKey}`;
  if (door.asyncJob && !opts.auth) {
    walletId = (await t.gw.ledger.createWallet({ credits: 10_000_000 })).id;
    auth = `Bearer ${(await t.gw.keys.createApiKey(walletId, { name: 'fuzz' })).key}`;
  }
  const before = await money(walletId);
  const res = await fetch(`${t.url}${door.path}`, {
    method: opts.method ?? 'POST',
    headers: { authorization: auth, 'content-type': 'application/json', ...door.headers },
    body: text,
  });
  const answer = await res.text();
  tally.cases += 1;
  const ctx = `${door.path} ${context}: ${res.status} ${answer.slice(0, 200)}`;
  expect(res.status, ctx).toBeLessThan(500);
  if (res.status >= 400) {
    tally.refused += 1;
    expectShape(door.shape, res.status, answer, ctx);
    if (opts.expectParam) expect(JSON.parse(answer).error.message, ctx).toContain(opts.expectParam);
    // A hold taken before a vendor's refusal ends just after the answer is sent.
    for (let i = 0; i < 100 && (await money(walletId)).reserved !== before.reserved; i++) await sleep(10);
    expect(await money(walletId), `${ctx}: a refused call moved money`).toEqual(before);
  } else {
    tally.ok += 1;
    if (!door.asyncJob) {
      // The hold ends just after the answer is sent.
      for (let i = 0; i < 100 && (await money(walletId)).reserved !== 0n; i++) await sleep(10);
      expect((await money(walletId)).reserved, `${ctx}: a hold outlived its call`).toBe(0n);
    }
  }
  return res.status;
}

describe('hostile input at the model doors', () => {
  for (const door of DOORS) {
    const label = `${door.path} (${door.body.model})`;
    it(`${label}: one hostile field is a valid call or a 4xx in the door's shape, never charged when refused`, async () => {
      const fields = [...Object.keys(door.body), ...(door.stored ?? []), 'stream', 'n', 'temperature', 'tools'];
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...fields), hostile, async (field, value) => {
          await sendCase(door, JSON.stringify({ ...door.body, [field]: value }), `${field}=${JSON.stringify(value)?.slice(0, 60)}`);
        }),
        { numRuns: RUNS },
      );
    }, 120_000);

    it(`${label}: a lone surrogate anywhere in any string field is a 400 naming that field`, async () => {
      const fields = [...Object.keys(door.body), ...(door.stored ?? []), 'user'];
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...fields), loneSurrogateText, fc.boolean(), async (field, text, nested) => {
          // Nested one level down too (`input_reference.image_url`, a message's content): the field's path is named.
          const value = nested ? { image_url: text } : text;
          const path = nested ? `${field}.image_url` : field;
          const status = await sendCase(door, JSON.stringify({ ...door.body, [field]: value }), `${path} with a lone surrogate`, {
            expectParam: path,
          });
          expect(status).toBe(400);
        }),
        { numRuns: Math.ceil(RUNS / 2) },
      );
    }, 120_000);

    it(`${label}: bytes that are not UTF-8 in a string are a valid call or a 4xx in the door's shape`, async () => {
      const json = JSON.stringify(door.body);
      const bytes = new Blob([`${json.slice(0, -1)},"user":"`, new Uint8Array([0xff, 0xfe, 0xc0, 0x80]), '"}']);
      await sendCase(door, bytes, 'invalid UTF-8');
    });

    it(`${label}: a duplicated key is a valid call or a 4xx in the door's shape`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...Object.keys(door.body)), hostile, async (field, value) => {
          await sendCase(door, withDuplicateKey(door.body, field, value), `duplicate ${field}`);
        }),
        { numRuns: Math.ceil(RUNS / 2) },
      );
    }, 120_000);

    it(`${label}: a body broken as a whole is always a 4xx in the door's shape`, async () => {
      await fc.assert(
        fc.asyncProperty(brokenBody(door.body), async ({ what, text }) => {
          const status = await sendCase(door, text, what);
          expect(status, what).toBeGreaterThanOrEqual(400);
        }),
        { numRuns: Math.ceil(RUNS / 2) },
      );
    }, 120_000);
  }
});

describe('hostile input at the key doors and the admin API', () => {
  const keyFields = {
    count: 1,
    name: 'fuzz',
    name_prefix: 'p',
    audience: 'student',
    monthly_limit_credits: 10,
    daily_limit_credits: 5,
    expires_on: '2030-01-01',
  };

  it("POST /v1/keys and PATCH /v1/keys/:id: one hostile field is a valid change or a 4xx in the door's shape", async () => {
    const { key: management } = await t.gw.keys.createManagementKey(t.walletId);
    const { id } = await t.gw.keys.createApiKey(t.walletId, { name: 'fuzz target' });
    const auth = `Bearer ${management}`;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(keyFields)), hostile, fc.boolean(), async (field, value, dup) => {
        const body = { name: 'fuzz', [field]: value };
        const text = dup ? withDuplicateKey(body, field, value) : JSON.stringify(body);
        await sendCase({ path: '/v1/keys', shape: 'chat' }, text, `POST ${field}=${JSON.stringify(value)?.slice(0, 60)}`, { auth });
        await sendCase({ path: `/v1/keys/${id}`, shape: 'chat' }, text, `PATCH ${field}`, { auth, method: 'PATCH' });
      }),
      { numRuns: RUNS },
    );
    await fc.assert(
      fc.asyncProperty(brokenBody(keyFields), async ({ what, text }) => {
        expect(await sendCase({ path: '/v1/keys', shape: 'chat' }, text, what, { auth })).toBeGreaterThanOrEqual(400);
      }),
      { numRuns: Math.ceil(RUNS / 2) },
    );
  }, 120_000);

  it("the admin API: a hostile field is a valid change or a 4xx in the door's shape; broken bodies are a 4xx", async () => {
    const auth = 'Bearer test-admin-token';
    const targets = [
      { path: '/admin/v1/wallets', body: { credits: 10, splits_usage: false, key_slots: 5, owner_id: 'o' } },
      { path: `/admin/v1/wallets/${t.walletId}/credits`, body: { credits: 1, vendors: ['c'] } },
      { path: `/admin/v1/wallets/${t.walletId}/management-keys`, body: { name: 'm' } },
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), hostile, fc.nat(), async (target, value, pick) => {
        const fields = Object.keys(target.body);
        const field = fields[pick % fields.length]!;
        // A top-up is money in; every other admin answer must leave the test wallet's money as it was.
        const door = { path: target.path, shape: 'chat' as const };
        const before = await money();
        const res = await fetch(`${t.url}${target.path}`, {
          method: 'POST',
          headers: { authorization: auth, 'content-type': 'application/json' },
          body: JSON.stringify({ ...target.body, [field]: value }),
        });
        const text = await res.text();
        tally.cases += 1;
        const ctx = `${target.path} ${field}=${JSON.stringify(value)?.slice(0, 60)}: ${res.status} ${text.slice(0, 200)}`;
        expect(res.status, ctx).toBeLessThan(500);
        if (res.status >= 400) {
          tally.refused += 1;
          expectShape(door.shape, res.status, text, ctx);
          expect(await money(), ctx).toEqual(before);
        } else tally.ok += 1;
      }),
      { numRuns: RUNS },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), fc.nat(), async (target, seed) => {
        const { what, text } = fc.sample(brokenBody(target.body), { numRuns: 1, seed })[0]!;
        const status = await sendCase({ path: target.path, shape: 'chat' }, text, what, { auth });
        expect(status, what).toBeGreaterThanOrEqual(400);
      }),
      { numRuns: Math.ceil(RUNS / 2) },
    );
  }, 120_000);
});

describe('lone surrogates in the text the key doors and the admin API store', () => {
  it('every stored string field is a 400 naming it, nothing created and no money moved', async () => {
    const { key: management } = await t.gw.keys.createManagementKey(t.walletId);
    const { id } = await t.gw.keys.createApiKey(t.walletId, { name: 'surrogate target' });
    // The owner change runs on a wallet of its own: a change that went through would close the keys above.
    const { id: ownWallet } = await t.gw.ledger.createWallet({ credits: 0 });
    const admin = 'Bearer test-admin-token';
    const targets = [
      { path: '/v1/keys', method: 'POST', auth: `Bearer ${management}`, fields: ['name', 'name_prefix', 'audience', 'expires_on'] },
      { path: `/v1/keys/${id}`, method: 'PATCH', auth: `Bearer ${management}`, fields: ['name', 'audience', 'expires_on'] },
      { path: '/admin/v1/wallets', method: 'POST', auth: admin, fields: ['owner_id', 'name'] },
      { path: `/admin/v1/wallets/${ownWallet}`, method: 'PATCH', auth: admin, fields: ['name'] },
      { path: `/admin/v1/wallets/${ownWallet}/owner`, method: 'POST', auth: admin, fields: ['owner_id'] },
      { path: `/admin/v1/wallets/${t.walletId}/management-keys`, method: 'POST', auth: admin, fields: ['name'] },
    ];
    const keysBefore = await t.gw.db.query<{ n: string }>('SELECT count(*)::text AS n FROM api_keys');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), fc.nat(), loneSurrogateText, async (target, pick, text) => {
        const field = target.fields[pick % target.fields.length]!;
        const body = JSON.stringify({ [field]: text });
        const status = await sendCase({ path: target.path, shape: 'chat' }, body, `${target.method} ${field}`, {
          auth: target.auth,
          method: target.method,
          expectParam: field,
        });
        expect(status).toBe(400);
      }),
      { numRuns: RUNS },
    );
    const keysAfter = await t.gw.db.query<{ n: string }>('SELECT count(*)::text AS n FROM api_keys');
    expect(keysAfter.rows[0]!.n).toBe(keysBefore.rows[0]!.n);
  }, 120_000);
});

describe('hostile requests refused before any route answer in the door shape too', () => {
  it('a malformed URL escape is a 400 in the door’s shape', async () => {
    const res = await fetch(`${t.url}/v1/chat/completions%zz`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const text = await res.text();
    expect(res.status).toBe(400);
    expectShape('chat', res.status, text, 'bad URL');
  });

  it('headers too large are a 431 in the door’s shape', async () => {
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', 'x-big': 'a'.repeat(20_000) },
      body: '{}',
    });
    const text = await res.text();
    expect(res.status).toBe(431);
    expectShape('chat', res.status, text, 'headers too large');
  });
});
