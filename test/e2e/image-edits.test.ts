// POST /v1/images/edits: a multipart door on the shared pipeline. The form's values go through the same
// model lookup, refusals, reservation and settlement as the JSON doors; the image file travels beside them
// and is re-encoded as multipart for the vendor (again on each fallback route).
import { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MultipartBody } from '../../simulator/index.ts';
import { PNG_1X1_BASE64 } from '../../simulator/media.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectInvalid, openai } from './e2e.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const PNG = Buffer.from(PNG_1X1_BASE64, 'base64');
const MB = 1024 * 1024;
/** image-b-1: $5 / $30 per 1M tokens (spec; catalog/media.yaml), in nano per token. */
const IMAGE_B_1 = { input: 5_000, output: 30_000 };

/** A form with string values and `[name, bytes, filename]` files, posted with the test key. */
function form(values: Record<string, string>, files: [string, Buffer, string][] = [], headers: Record<string, string> = {}) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(values)) fd.append(k, v);
  for (const [name, bytes, filename] of files) fd.append(name, new Blob([new Uint8Array(bytes)], { type: 'image/png' }), filename);
  return fetch(`${t.url}/v1/images/edits`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, ...headers },
    body: fd,
  });
}

/** Runs `run`, returns the vendor B requests it caused and what the wallet was charged. */
async function observe<T>(run: () => Promise<T>): Promise<{ out: T; sent: { route: string; body: MultipartBody }[]; nano: bigint }> {
  const before = await t.balance();
  const n = t.received('b').length + t.received('d').length;
  const out = await run();
  if (out instanceof Response) await out.clone().arrayBuffer();
  const sent = [...t.received('b'), ...t.received('d')].slice(n).map((r) => ({ route: r.route, body: r.body as MultipartBody }));
  expect(await t.held()).toBe(0n);
  return { out, sent, nano: before - (await t.balance()) };
}

describe('image edits', () => {
  it('the openai SDK edits an image: b64_json back, fields and file reach vendor B, token usage billed', async () => {
    const { out, sent, nano } = await observe(async () =>
      openai(t)
        .images.edit({
          model: 'image-b-1',
          image: await toFile(PNG, 'in.png', { type: 'image/png' }),
          prompt: 'add a red hat',
          size: '1024x1024',
        })
        .withResponse(),
    );
    const { data, response } = out;
    expect(response.status).toBe(200);
    expect(response.headers.get('x-gateway-fallback-depth')).toBe('0');
    expect(typeof data.data?.[0]?.b64_json).toBe('string');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.route).toBe('b0');
    expect(sent[0]!.body.fields).toMatchObject({ model: 'image-b-1', prompt: 'add a red hat', size: '1024x1024' });
    expect(sent[0]!.body.files).toEqual([{ name: 'image', filename: 'in.png', size: PNG.length }]);
    const usage = data.usage!;
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(nano).toBe(BigInt(usage.input_tokens * IMAGE_B_1.input + usage.output_tokens * IMAGE_B_1.output));
  });

  it('an image of exactly the limit (4 MB) is accepted and sent whole', async () => {
    const big = Buffer.alloc(4 * MB, 7);
    const { out: res, sent } = await observe(() => form({ model: 'image-b-1', prompt: 'x' }, [['image', big, 'big.png']]));
    expect(res.status).toBe(200);
    expect(sent[0]!.body.files).toEqual([{ name: 'image', filename: 'big.png', size: 4 * MB }]);
  });

  it('an image above 4 MB: 413 request_too_large in the chat shape, nothing sent, nothing charged', async () => {
    const {
      out: res,
      sent,
      nano,
    } = await observe(() => form({ model: 'image-b-1', prompt: 'x' }, [['image', Buffer.alloc(5 * MB, 1), 'huge.png']]));
    expect(res.status).toBe(413);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ type: 'request_too_large', code: 'request_too_large' });
    expect(body.error.message).toContain('4 MB');
    expect(sent).toHaveLength(0);
    expect(nano).toBe(0n);
  });

  it('a mask is refused with 400 before any vendor call, as a value or as a file', async () => {
    for (const send of [
      () => form({ model: 'image-b-1', prompt: 'x', mask: 'anything' }, [['image', PNG, 'in.png']]),
      () =>
        form({ model: 'image-b-1', prompt: 'x' }, [
          ['image', PNG, 'in.png'],
          ['mask', PNG, 'mask.png'],
        ]),
    ]) {
      const { out: res, sent, nano } = await observe(send);
      const body = await expectInvalid(res);
      expect(body.error.message).toContain('mask is not accepted');
      expect(sent).toHaveLength(0);
      expect(nano).toBe(0n);
    }
  });

  it('a text model gives 400 naming /v1/chat/completions', async () => {
    const { out: res, sent } = await observe(() => form({ model: 'b-5', prompt: 'x' }, [['image', PNG, 'in.png']]));
    const body = await expectInvalid(res);
    expect(body.error.message).toContain('/v1/chat/completions');
    expect(sent).toHaveLength(0);
  });

  it('429 on the first route: depth 1 via the second, the file re-sent whole, charged once', async () => {
    const image = Buffer.alloc(300_000, 3);
    t.sim.inject('b0', { kind: 'status', status: 429 });
    const {
      out: res,
      sent,
      nano,
    } = await observe(() =>
      form({ model: 'image-b-1', prompt: 'a boat [[sim:usage input=100 output=200]]' }, [['image', image, 'boat.png']]),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-fallback-depth')).toBe('1');
    expect(sent.map((s) => s.route)).toEqual(['b0', 'b1']);
    for (const s of sent) {
      expect(s.body.fields).toMatchObject({ model: 'image-b-1' });
      expect(s.body.files).toEqual([{ name: 'image', filename: 'boat.png', size: image.length }]);
    }
    expect(((await res.json()) as any).usage).toMatchObject({ input_tokens: 100, output_tokens: 200 });
    expect(nano).toBe(BigInt(100 * IMAGE_B_1.input + 200 * IMAGE_B_1.output));
  });

  it('without the image: 400 naming it, nothing sent', async () => {
    const { out: res, sent } = await observe(() => form({ model: 'image-b-1', prompt: 'x' }));
    const body = await expectInvalid(res);
    expect(body.error.param).toBe('image');
    expect(sent).toHaveLength(0);
  });

  it('an empty image: 400 naming it, nothing sent, nothing charged', async () => {
    const {
      out: res,
      sent,
      nano,
    } = await observe(() => form({ model: 'image-b-1', prompt: 'x' }, [['image', Buffer.alloc(0), 'empty.png']]));
    const body = await expectInvalid(res);
    expect(body.error).toMatchObject({ param: 'image', message: 'The image file is empty. Send it with its content.' });
    expect(sent).toHaveLength(0);
    expect(nano).toBe(0n);
  });

  it('values sent as files and the image sent as a value are 400', async () => {
    for (const send of [
      () =>
        form({ model: 'image-b-1' }, [
          ['image', PNG, 'in.png'],
          ['prompt', Buffer.from('x'), 'prompt.txt'],
        ]),
      () => form({ model: 'image-b-1', prompt: 'x', image: PNG_1X1_BASE64 }),
      () =>
        form({ model: 'image-b-1', prompt: 'x' }, [
          ['image', PNG, 'a.png'],
          ['image', PNG, 'b.png'],
        ]),
    ]) {
      const { out: res, sent } = await observe(send);
      await expectInvalid(res);
      expect(sent).toHaveLength(0);
    }
  });

  it('n above 1 is refused like on the generation door; n=1 passes', async () => {
    const refused = await observe(() => form({ model: 'image-b-1', prompt: 'x', n: '2' }, [['image', PNG, 'in.png']]));
    expect((await expectInvalid(refused.out)).error.message).toContain('one image');
    expect(refused.sent).toHaveLength(0);
    const ok = await observe(() => form({ model: 'image-b-1', prompt: 'x', n: '1' }, [['image', PNG, 'in.png']]));
    expect(ok.out.status).toBe(200);
    expect(ok.sent[0]!.body.fields.n).toBe('1');
  });

  it('a JSON body is refused: the door takes a form', async () => {
    const res = await fetch(`${t.url}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'image-b-1', prompt: 'x', image: PNG_1X1_BASE64 }),
    });
    expect((await expectInvalid(res)).error.message).toContain('multipart/form-data');
  });

  it('a bad key is 401 in the chat shape, with the form unread', async () => {
    const res = await form({ model: 'image-b-1', prompt: 'x' }, [['image', Buffer.alloc(MB, 2), 'in.png']], {
      authorization: 'Bearer sk-not-a-key',
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.type).toBe('authentication_error');
  });
});
