// Half of a UTF-16 surrogate pair, alone in any string of any body, is refused where bodies are read: a 400
// in the door's shape naming the field, before anything is held, on both databases. Found by an attack: a
// video's starting image with one answered 503 after its hold (PostgreSQL refused the stored jsonb).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldWithUnpairedSurrogate } from '../../engine/http/unpaired-surrogates.ts';
import { openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const LONE_HIGH = 'https://example.com/a\ud800b';
const LONE_LOW_DATA_URI = 'data:image/png;base64,iVBOR\udc00w0KGgo=';

describe('fieldWithUnpairedSurrogate', () => {
  it('names the first field holding a lone half, by its path; pairs are text', () => {
    expect(fieldWithUnpairedSurrogate({ a: 'ok 🦊', b: [{ c: 'x' }, { d: 'y\udfff' }] })).toBe('b[1].d');
    expect(fieldWithUnpairedSurrogate({ input_reference: { image_url: LONE_HIGH } })).toBe('input_reference.image_url');
    expect(fieldWithUnpairedSurrogate({ 'k\ud800': 1 })).toBe('k\ud800');
    expect(fieldWithUnpairedSurrogate('\udc00\ud800')).toBe('body'); // the wrong order is not a pair
    expect(fieldWithUnpairedSurrogate({ a: '👩‍👩‍👧‍👦', b: [1, null, true], c: '\ud83e\udd8a' })).toBeNull();
  });

  it('names the path deep in arrays and objects, and reads an object’s keys before its values', () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'ok' },
          { type: 'text', text: 'y\ud800' },
        ],
      },
    ];
    expect(fieldWithUnpairedSurrogate({ model: 'm', messages })).toBe('messages[0].content[1].text');
    expect(fieldWithUnpairedSurrogate(['a', [1, ['\udc00']]])).toBe('[1][1][0]');
    expect(fieldWithUnpairedSurrogate({ a: [{ b: { ok: 'x', 'k\udc00': 1 } }] })).toBe('a[0].b.k\udc00');
    expect(fieldWithUnpairedSurrogate({ a: 'x\ud800', 'k\ud800': 1, 'j\ud800': 2 })).toBe('j\ud800');
  });
});

for (const kind of ['pglite', 'postgres'] as const) {
  describe.skipIf(kind === 'postgres' && !postgresAvailability.ok)(`lone surrogates at the doors (${kind})`, () => {
    let pg: TestPostgres | null = null;
    let t: TestGateway;
    beforeAll(async () => {
      pg = kind === 'postgres' ? await openTestPostgres() : null;
      t = await startTestGateway({ env: pg ? { DATABASE_URL: pg.url } : {} });
    });
    afterAll(async () => {
      await t?.close();
      await pg?.cleanup();
    });

    const headers = () => ({ authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' });

    /** A 400 naming `field`, with the wallet's money untouched and no video job stored. */
    async function expectRefused(res: Response, field: string, shape: 'chat' | 'messages' = 'chat') {
      const text = await res.text();
      expect(res.status, text).toBe(400);
      const body = JSON.parse(text);
      if (shape === 'messages') expect(body.type).toBe('error');
      else expect(body.error.param).toBe(field);
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.message).toContain(field);
    }

    async function expectNothingMoved(run: () => Promise<void>) {
      const before = await t.balance();
      await run();
      expect(await t.balance()).toBe(before);
      expect(await t.held()).toBe(0n);
      const jobs = await t.gw.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM video_jobs WHERE wallet_id = $1`, [t.walletId]);
      expect(jobs.rows[0]!.n).toBe('0');
    }

    it("a video's image_url, https or data URI, is a 400 naming it, before any hold", async () => {
      await expectNothingMoved(async () => {
        for (const image_url of [LONE_HIGH, LONE_LOW_DATA_URI]) {
          const res = await fetch(`${t.url}/v1/videos`, {
            method: 'POST',
            headers: headers(),
            body: JSON.stringify({ model: 'video-d-1', prompt: 'a cat', image_url }),
          });
          await expectRefused(res, 'image_url');
        }
      });
    });

    it("a video's input_reference.image_url, as JSON and as a form's JSON part, is a 400 naming it", async () => {
      await expectNothingMoved(async () => {
        const json = await fetch(`${t.url}/v1/videos`, {
          method: 'POST',
          headers: headers(),
          body: JSON.stringify({ model: 'video-d-1', prompt: 'a cat', input_reference: { image_url: LONE_HIGH } }),
        });
        await expectRefused(json, 'input_reference.image_url');
        // Written by hand: FormData gives a Blob a filename, and a part with one is a file, not a value.
        const boundary = 'lone-surrogate-boundary';
        const part = (name: string, value: string, type?: string) =>
          `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n${value}\r\n`;
        const formText =
          part('model', 'video-d-1') +
          part('prompt', 'a cat') +
          part('input_reference[image_url]', JSON.stringify(LONE_LOW_DATA_URI), 'application/json') +
          `--${boundary}--\r\n`;
        const multipart = await fetch(`${t.url}/v1/videos`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
          body: formText,
        });
        await expectRefused(multipart, 'input_reference.image_url');
      });
    });

    it('any other stored text (a video prompt, a key name) and text sent on (a message) alike, in the door’s shape', async () => {
      const prompt = await fetch(`${t.url}/v1/videos`, {
        method: 'POST',
        headers: headers(),
        body: JSON.stringify({ model: 'video-d-1', prompt: 'x\udfffy' }),
      });
      await expectRefused(prompt, 'prompt');
      const messages = await fetch(`${t.url}/v1/messages`, {
        method: 'POST',
        headers: { ...headers(), 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'a-top-5.5', max_tokens: 20, messages: [{ role: 'user', content: 'hi \ud800' }] }),
      });
      await expectRefused(messages, 'messages[0].content', 'messages');
      const management = (await t.gw.keys.createManagementKey(t.walletId, 'ops')).key;
      const key = await fetch(`${t.url}/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${management}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'class \udc00' }),
      });
      await expectRefused(key, 'name');
    });

    it('a pair is text: a video whose image URL carries an emoji is queued', async () => {
      const res = await fetch(`${t.url}/v1/videos`, {
        method: 'POST',
        headers: headers(),
        body: JSON.stringify({ model: 'video-d-1', prompt: 'a 🦊', image_url: 'https://example.com/🦊.png' }),
      });
      expect(res.status, await res.clone().text()).toBe(200);
      expect((await res.json()).status).toBe('queued');
    });
  });
}
