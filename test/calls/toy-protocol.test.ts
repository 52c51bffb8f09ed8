// A wire format added from a test folder, with no edit to engine/ or transforms/: the folder toy-protocol/ declares
// the format and the chain the chat door runs to it, as a real format's folder does (transforms/protocols/<format>/);
// it takes its place beside the real formats, one line of doors.yaml names it for vendor D, and a chat client on the
// official SDK is served by a vendor speaking only that format: the body translated, the answer translated
// back, the usage charged, the format's limit field lowering the hold, and its errors in the door's shape with
// the types its unit maps.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Runtime } from '../../engine/catalog/runtime.ts';
import { protocols } from '../../transforms/protocols/index.ts';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';
import { CHAT_DOOR_ERRORS_TOY, CHAT_DOOR_TO_TOY, generateContent } from './toy-protocol/index.ts';

interface ToyVendor {
  url: string;
  bodies: { path: string; body: Record<string, unknown> }[];
  /** The next answer's status and body, once; otherwise a candidate echoing the last turn. */
  next?: { status: number; body: unknown } | undefined;
  server: Server;
}

async function startToyVendor(): Promise<ToyVendor> {
  const vendor: ToyVendor = { url: '', bodies: [], server: createServer() };
  vendor.server.on('request', async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    vendor.bodies.push({ path: req.url ?? '', body });
    const scripted = vendor.next;
    vendor.next = undefined;
    const contents = body.contents as { parts: { text: string }[] }[];
    const answer = scripted ?? {
      status: 200,
      body: {
        response_id: `toy-${vendor.bodies.length}`,
        model_version: 'd-4-toy-0601',
        candidates: [{ content: { role: 'model', parts: [{ text: `echo: ${contents.at(-1)?.parts[0]?.text}` }] }, finish_reason: 'STOP' }],
        usage_metadata: { prompt_token_count: 10, candidates_token_count: 20 },
      },
    };
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((r) => vendor.server.listen(0, '127.0.0.1', r));
  vendor.url = `http://127.0.0.1:${(vendor.server.address() as AddressInfo).port}`;
  return vendor;
}

// d-4 (catalog/vendor-d.yaml): $3 input and $15 output per 1M tokens; 64,000 output tokens at most.
const D4_NANO = (input: number, output: number) => BigInt(input * 3_000 + output * 15_000);

let tree: TempTree;
let toy: ToyVendor;
let t: TestGateway;
const SMALL_CALL = { model: 'd-4', messages: [{ role: 'user', content: 'x' }], max_tokens: 10 };
const client = () => new OpenAI({ apiKey: t.apiKey, baseURL: `${t.url}/v1`, maxRetries: 0 });

beforeAll(async () => {
  protocols['generate-content'] = generateContent;
  tree = tempCatalogTree();
  tree.edit('config/doors.yaml', (text) => text.replace(CHAT_DOOR_TO_TOY.from, CHAT_DOOR_TO_TOY.to));
  toy = await startToyVendor();
  // 200,000 credits: $0.20, less than d-4's whole output ($0.96), more than a call capped at 1,000 tokens.
  t = await startTestGateway({
    dirs: { config: tree.config, catalog: tree.catalog },
    credits: 200_000,
    env: { GATEWAY_VENDOR_D_URLS: toy.url },
  });
});

afterAll(async () => {
  await t?.close();
  await new Promise((r) => toy?.server.close(r));
  tree?.remove();
});

describe('a wire format added from a test folder', () => {
  it('touches one folder and one line of YAML: nothing under engine/ or transforms/ names it', () => {
    const folder = readdirSync(new URL('./toy-protocol/', import.meta.url)).map((f) => `test/calls/toy-protocol/${f}`);
    const lines = (root: string) => readFileSync(`${root}/doors.yaml`, 'utf8').split('\n');
    const [shipped, edited] = [lines('config'), lines(tree.config)];
    const changed = edited.flatMap((line, i) => (line === shipped[i] ? [] : [`config/doors.yaml:${i + 1}`]));
    expect(edited.length).toBe(shipped.length);
    const touched = [...folder, ...changed];
    expect(touched).toEqual([
      'test/calls/toy-protocol/index.ts',
      'test/calls/toy-protocol/steps.ts',
      'test/calls/toy-protocol/transcript.ts',
      `config/doors.yaml:${shipped.indexOf(CHAT_DOOR_TO_TOY.from.trimEnd()) + 1}`,
    ]);
    const knowing = ['engine', 'transforms'].flatMap((dir) =>
      readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
        (f) => f.endsWith('.ts') && readFileSync(`${dir}/${f}`, 'utf8').includes('generate-content'),
      ),
    );
    expect(knowing).toEqual([]);
  });

  it('the catalog check knows the format only once it takes its place beside the real ones', () => {
    const dirs = { config: tree.config, catalog: tree.catalog };
    const unit = protocols['generate-content'];
    delete protocols['generate-content'];
    try {
      expect(() => new Runtime(dirs)).toThrow(/door 'chat' protocol 'generate-content': 'generate-content' is not a wire format/);
      protocols['generate-content'] = { ...unit!, chains: {} };
      expect(() => new Runtime(dirs)).toThrow(/door 'chat' protocol 'generate-content': the format declares no chain for door 'chat'/);
    } finally {
      protocols['generate-content'] = unit!;
    }
    expect(new Runtime(dirs).snapshot().config.doors.chat?.vendor_protocol.d).toBe('generate-content');
  });

  it('serves a chat client: the body goes out in the format, the answer comes back as chat, the usage is charged', async () => {
    const before = await t.balance();
    const answer = await client().chat.completions.create({
      model: 'd-4',
      messages: [{ role: 'user', content: 'hello toy' }],
      max_tokens: 1000,
    });
    expect(answer.choices[0]?.message.content).toBe('echo: hello toy');
    expect(answer.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 20 });

    const sent = toy.bodies.at(-1)!;
    expect(sent.path).toBe('/v1beta/generate');
    expect(sent.body).toEqual({ model: 'd-4', contents: [{ role: 'user', parts: [{ text: 'hello toy' }] }], max_output_token_count: 1000 });
    expect(before - (await t.balance())).toBe(D4_NANO(10, 20));
    expect(await t.held()).toBe(0n);
  });

  it("holds by the format's own limit field: without max_tokens the whole output would not fit, so the gateway writes one", async () => {
    const res = await client()
      .chat.completions.create({ model: 'd-4', messages: [{ role: 'user', content: 'no limit' }] })
      .withResponse();
    const written = Number(res.response.headers.get('x-service-max-tokens'));
    expect(written).toBeGreaterThan(1000);
    expect(written).toBeLessThan(64_000);
    expect(toy.bodies.at(-1)!.body.max_output_token_count).toBe(written);
  });

  it("maps the vendor's error types the contract does not name, and reshapes its errors for the door", async () => {
    toy.next = { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'model d-4 is not served here' } } };
    const notFound = await post(t, '/v1/chat/completions', SMALL_CALL);
    expect(notFound.status).toBe(404);
    expect((await notFound.json()).error).toMatchObject({ type: 'model_not_found', message: 'model d-4 is not served here' });

    toy.next = { status: 400, body: { error: { code: 400, status: 'SOMETHING_NEW', message: 'odd request' } } };
    const unknown = await post(t, '/v1/chat/completions', SMALL_CALL);
    expect(unknown.status).toBe(400);
    // A type the contract does not know and the unit does not map follows the status: never the vendor's word.
    expect((await unknown.json()).error).toMatchObject({ type: 'invalid_request_error', message: 'odd request' });
    expect(await t.held()).toBe(0n);
  });
});

describe("a door answering in the toy format's error body", () => {
  let tree2: TempTree;
  let t2: TestGateway;
  beforeAll(async () => {
    tree2 = tempCatalogTree();
    tree2.edit('config/doors.yaml', (text) =>
      text.replace(CHAT_DOOR_TO_TOY.from, CHAT_DOOR_TO_TOY.to).replace(CHAT_DOOR_ERRORS_TOY.from, CHAT_DOOR_ERRORS_TOY.to),
    );
    t2 = await startTestGateway({ dirs: { config: tree2.config, catalog: tree2.catalog }, env: { GATEWAY_VENDOR_D_URLS: toy.url } });
  });
  afterAll(async () => {
    await t2?.close();
    tree2?.remove();
  });

  it("writes the gateway's refusals in it, and describes it in the API description", async () => {
    const refused = await post(t2, '/v1/chat/completions', { model: 'd-4', max_tokens: 10 });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: { code: 400, message: expect.stringContaining('messages'), status: 'invalid_request_error' },
    });
    const other = await post(t2, '/v1/embeddings', { model: 'nope' });
    expect((await other.json()).error).toHaveProperty('type'); // other doors keep theirs

    const doc = (await (await fetch(`${t2.url}/openapi.json`)).json()) as any;
    const ref = doc.paths['/v1/chat/completions'].post.responses['400'].content['application/json'].schema.$ref;
    expect(ref).toBe('#/components/schemas/GenerateContentError');
    expect(doc.components.schemas.GenerateContentError.properties.error.required).toEqual(['code', 'message', 'status']);
  });

  it("passes the vendor's own error through unchanged, since its clients read the same body", async () => {
    const vendorBody = { error: { code: 400, status: 'SOMETHING_NEW', message: 'odd request' } };
    toy.next = { status: 400, body: vendorBody };
    const res = await post(t2, '/v1/chat/completions', SMALL_CALL);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(vendorBody);
  });

  it('is refused at load when the format it names declares no error body, or is no format', () => {
    const dirs = { config: tree2.config, catalog: tree2.catalog };
    const unit = protocols['generate-content']!;
    protocols['generate-content'] = { ...unit, errors: { read: unit.errors.read, types: unit.errors.types } };
    try {
      expect(() => new Runtime(dirs)).toThrow(/door 'chat' errors 'generate-content' declares no error body its clients read/);
    } finally {
      protocols['generate-content'] = unit;
    }
    tree2.edit('config/doors.yaml', (text) => text.replace(CHAT_DOOR_ERRORS_TOY.to, '  errors: chat\n'));
    expect(() => new Runtime(dirs)).toThrow(/door 'chat' errors 'chat' is not a wire format: formats that declare one are /);
  });
});

describe('a traced call through the toy format, with content capture on', () => {
  let receiver: OtlpReceiver;
  let traced: TestGateway;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    traced = await startTestGateway({
      dirs: { config: tree.config, catalog: tree.catalog },
      env: {
        GATEWAY_VENDOR_D_URLS: toy.url,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      },
    });
  });
  afterAll(async () => {
    await traced?.close();
    await receiver?.close();
  });

  it("reads the client's body in the door's format and the vendor's answer in the toy's", async () => {
    const res = await post(traced, '/v1/chat/completions', { ...SMALL_CALL, messages: [{ role: 'user', content: 'hello toy' }] });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as any;
    expect(answer.choices[0].finish_reason).toBe('stop'); // the door's word; the span keeps the vendor's
    const call = await receiver.waitFor((spans) => {
      void traced.gw.telemetry!.flush();
      return spans.find((s) => s.name === 'chat d-4');
    });
    expect(call.attributes).toMatchObject({
      'gen_ai.response.id': `toy-${toy.bodies.length}`,
      'gen_ai.response.model': 'd-4-toy-0601',
      'gen_ai.response.finish_reasons': ['STOP'],
    });
    expect(JSON.parse(String(call.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'hello toy' }] },
    ]);
    expect(JSON.parse(String(call.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'echo: hello toy' }], finish_reason: 'STOP' },
    ]);
  });
});
