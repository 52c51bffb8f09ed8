// Every field that names a model, as each wire format declares them (transforms/protocols/ `modelFields`), holds
// to the key's list of models: on every door and every chain to a format, a call naming a model outside the list
// in any declared field is refused with 403 permission_error naming the field, before anything is held and
// before the vendor is called. Issue 39: an advisor tool's `model` used to pass a key allowed `a-mid-*` only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalog } from '../../engine/catalog/catalog.ts';
import { loadConfig, protocolNameFor } from '../../engine/catalog/config.ts';
import type { ModelField } from '../../engine/core/protocol.ts';
import { protocols } from '../../transforms/protocols/index.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { A_VERSION } from './e2e.ts';

const config = loadConfig('config');
const catalog = loadCatalog('catalog');

let t: TestGateway;
let managementKey: string;
beforeAll(async () => {
  t = await startTestGateway();
  managementKey = (await t.gw.keys.createManagementKey(t.walletId)).key;
});
afterAll(() => t?.close());

/** A key of the test wallet that may call only `models`. */
async function keyFor(models: string[]): Promise<string> {
  const res = await fetch(`${t.url}/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `only ${models[0]}`, models }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { data: { key: string }[] }).data[0]!.key;
}

/** A body each door takes, for `model`; a door added to doors.yaml fails here until it has one. */
const BODIES: Record<string, (model: string) => Record<string, unknown>> = {
  chat: (model) => ({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  messages: (model) => ({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  responses: (model) => ({ model, input: 'hi', max_output_tokens: 16 }),
  images: (model) => ({ model, prompt: 'a cat' }),
  'image-edits': (model) => ({ model, prompt: 'a hat' }),
  videos: (model) => ({ model, prompt: 'a cat', seconds: '4' }),
  speech: (model) => ({ model, input: 'hi', voice: 'alloy' }),
  embeddings: (model) => ({ model, input: 'hi' }),
  moderations: (model) => ({ model, input: 'hi' }),
};

/** A tool each format's chain carries to the vendor as it is, for a field declared in `tools`. */
const TOOLS: Record<string, (model: string) => Record<string, unknown>> = {
  messages: (model) => ({ type: 'advisor_20260301', name: 'advisor', model, max_uses: 1, max_tokens: 100 }),
  responses: (model) => ({ type: 'function', name: 'f', parameters: { type: 'object', properties: {} }, model }),
};

/** Chains whose translation builds the vendor's tools itself: a client cannot name a model there at all. */
const TRANSLATED = new Set(['chat→messages tools[].model']);

interface Case {
  door: string;
  chain: string;
  field: ModelField;
  allowed: string;
  outside: string;
}

/** Every door × chain × declared field, with a model of the chain's vendor on the list and one outside it. */
function cases(): Case[] {
  const out: Case[] = [];
  for (const door of Object.values(config.doors)) {
    const byChain = new Map<string, string[]>();
    for (const vendor of door.serves.vendors) {
      const chain = protocolNameFor(door, vendor);
      const models = [...catalog.models.values()].filter((m) => m.vendor === vendor && m.doors.includes(door.name) && !m.sale_ends);
      if (chain && models.length > 1 && !byChain.has(chain)) byChain.set(chain, [models[0]!.id, models[1]!.id]);
    }
    for (const [chain, [allowed, outside]] of byChain) {
      const wire = protocols[chain]!;
      for (const field of wire.modelFields) out.push({ door: door.name, chain, field, allowed: allowed!, outside: outside! });
    }
  }
  return out;
}

async function send(c: Case, key: string): Promise<Response> {
  const door = config.doors[c.door]!;
  const body = BODIES[c.door]?.(c.field.in ? c.allowed : c.outside);
  expect(body, `no test body for door ${c.door}`).toBeDefined();
  if (c.field.in) {
    const tool = TOOLS[c.chain];
    body![c.field.in] = [
      tool ? tool(c.outside) : { type: 'function', function: { name: 'f', parameters: {} }, [c.field.field]: c.outside },
    ];
  }
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...(c.door === 'messages' ? A_VERSION : {}) };
  if (door.body !== 'multipart') {
    return fetch(`${t.url}${door.path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  }
  const form = new FormData();
  for (const [k, v] of Object.entries(body!)) form.append(k, String(v));
  for (const f of door.files ?? []) form.append(f, new Blob([new Uint8Array([137, 80, 78, 71])], { type: 'image/png' }), 'in.png');
  return fetch(`${t.url}${door.path}`, { method: 'POST', headers, body: form });
}

describe('every declared model field holds to the key list (issue 39)', () => {
  const all = cases();

  it('covers every door and declares the advisor tool on the messages format', () => {
    expect(new Set(all.map((c) => c.door))).toEqual(new Set(Object.keys(config.doors)));
    expect(all.some((c) => c.door === 'messages' && c.field.in === 'tools')).toBe(true);
  });

  it.each(all.map((c) => [`${c.door} → ${c.chain}: ${c.field.in ? `${c.field.in}[].` : ''}${c.field.field}`, c] as const))(
    '%s outside the list: 403, nothing held, nothing sent',
    async (_name, c) => {
      const key = await keyFor([c.allowed]);
      const sentBefore = t.sim.received.length;
      const before = await t.balance();
      const res = await send(c, key);
      const text = await res.text();
      if (TRANSLATED.has(`${c.door}→${c.chain} ${c.field.in}[].${c.field.field}`)) {
        // The translation refuses or drops the field: whatever it answers, the vendor never reads the name.
        expect(t.sim.received.slice(sentBefore).some((r) => JSON.stringify(r.body).includes(c.outside))).toBe(false);
        return;
      }
      expect(res.status, text).toBe(403);
      const err = JSON.parse(text).error;
      expect(err.type).toBe('permission_error');
      expect(err.message).toContain(c.outside);
      expect(t.sim.received.length, 'the vendor was called').toBe(sentBefore);
      expect(await t.held()).toBe(0n);
      expect(await t.balance()).toBe(before);
    },
  );

  it("the issue's repro: a-mid-* key, a-mid-5.1 with an advisor naming a-top-5.5 → 403 naming tools[0].model", async () => {
    const key = await keyFor(['a-mid-*']);
    const sentBefore = t.sim.received.length;
    const res = await fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', ...A_VERSION },
      body: JSON.stringify({
        model: 'a-mid-5.1',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'advisor_20260301', name: 'advisor', model: 'a-top-5.5', max_uses: 1, max_tokens: 100 }],
      }),
    });
    const body = (await res.json()) as any;
    expect(res.status).toBe(403);
    expect(body).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect(body.error.message).toContain('tools[0].model');
    expect(t.sim.received.length).toBe(sentBefore);
    // The same advisor naming a model on the list is served, and priced as that model.
    const ok = await fetch(`${t.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', ...A_VERSION },
      body: JSON.stringify({
        model: 'a-mid-5.1',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'advisor_20260301', name: 'advisor', model: 'a-mid-4.5', max_uses: 1, max_tokens: 100 }],
      }),
    });
    expect(ok.status, await ok.text()).toBe(200);
  });

  it('a model field spelled otherwise in a tool (Model, MODEL, a full-width m) is a 400 naming it, nothing sent', async () => {
    const key = await keyFor(['a-mid-*']);
    const sentBefore = t.sim.received.length;
    for (const spelled of ['Model', 'MODEL', '\uff4dodel']) {
      const res = await fetch(`${t.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json', ...A_VERSION },
        body: JSON.stringify({
          model: 'a-mid-5.1',
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
          tools: [{ type: 'advisor_20260301', name: 'advisor', model: 'a-mid-4.5', [spelled]: 'a-top-5.5', max_uses: 1 }],
        }),
      });
      const body = (await res.json()) as any;
      expect(res.status, spelled).toBe(400);
      expect(body.error.message).toContain(spelled);
    }
    expect(t.sim.received.length).toBe(sentBefore);
    expect(await t.held()).toBe(0n);
  });

  it('a list of fallback models on the chat door is refused before the vendor sees it', async () => {
    const key = await keyFor(['e-open-70b']);
    const sentBefore = t.sim.received.length;
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'e-open-70b', models: ['e-open-405b'], max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toContain('models');
    expect(t.sim.received.length).toBe(sentBefore);
  });

  it('an advisor naming another vendor’s model, or a model the catalog lacks, is refused before anything is held', async () => {
    const key = await keyFor(['a-*', 'b-*']);
    const sentBefore = t.sim.received.length;
    for (const [model, status] of [
      ['b-6', 400],
      ['a-top-9', 404],
      [42, 400],
    ] as const) {
      const res = await fetch(`${t.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json', ...A_VERSION },
        body: JSON.stringify({
          model: 'a-mid-5.1',
          max_tokens: 16,
          messages: [{ role: 'user', content: 'hi' }],
          tools: [{ type: 'advisor_20260301', name: 'advisor', model, max_uses: 1 }],
        }),
      });
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(body.type).toBe('error');
    }
    expect(t.sim.received.length).toBe(sentBefore);
    expect(await t.held()).toBe(0n);
  });
});
