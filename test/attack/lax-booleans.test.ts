// Boolean fields a lax vendor may read as true where the gateway did not. First `stream`. The gateway streams only for `stream: true`; a body sending
// "true", 1 or "yes" was passed on as it was, and a vendor that reads such values as true (lax validators do)
// streams the answer. The gateway, not asked for a stream, reads that answer as one whole JSON body, fails, tries
// the next route and answers 502: the vendor's work is never charged. Each such value is now refused with 400
// naming `stream`, before any hold or vendor call. A form (multipart door) spells booleans as text: "true" asks
// for a stream, which no form door offers, and "false" is served.
// Then `deferred` (chat) and `background` (responses), refused when true by config/doors.yaml: "true" or 1 passed
// those rules, and a vendor that took them would run the call past its answer, where nothing reads or charges it.
// The rules now refuse anything but false (or null).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNG_1X1_BASE64 } from '../../simulator/media.ts';
import { A_VERSION, expectInvalid, post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const ask = [{ role: 'user', content: 'hi' }];

/** Runs `run` and checks that it reached no vendor and moved no money. */
async function nothingSentOrCharged(run: () => Promise<void>): Promise<void> {
  const sent = t.sim.received.length;
  const before = await t.balance();
  await run();
  expect(t.sim.received.length).toBe(sent);
  expect(await t.balance()).toBe(before);
}

describe('a stream value that is not a boolean is refused before any vendor call', () => {
  for (const value of ['true', 1, 'yes', {}]) {
    it(`chat, vendor B: stream ${JSON.stringify(value)}`, async () => {
      await nothingSentOrCharged(async () => {
        const body = await expectInvalid(
          await post(t, '/v1/chat/completions', { model: 'b-6', max_completion_tokens: 16, stream: value, messages: ask }),
        );
        expect(body.error.param).toBe('stream');
        expect(body.error.message).toContain('stream must be true or false');
      });
    });
  }

  it('messages, in its own error shape: stream 1', async () => {
    await nothingSentOrCharged(async () => {
      const res = await post(t, '/v1/messages', { model: 'a-small-4.5', max_tokens: 16, stream: 1, messages: ask }, A_VERSION);
      const body = await expectInvalid(res, 'messages');
      expect(body.error.message).toContain('stream must be true or false');
    });
  });

  it('image generations: stream "true" (the door streams nothing)', async () => {
    await nothingSentOrCharged(async () => {
      const body = await expectInvalid(await post(t, '/v1/images/generations', { model: 'image-b-1', prompt: 'a cat', stream: 'true' }));
      expect(body.error.param).toBe('stream');
    });
  });
});

describe('the values that are booleans are served as before', () => {
  it('chat: stream null is a plain answer, charged', async () => {
    const before = await t.balance();
    const res = await post(t, '/v1/chat/completions', { model: 'b-6', max_completion_tokens: 16, stream: null, messages: ask });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect((await res.json()).object).toBe('chat.completion');
    expect(await t.balance()).toBeLessThan(before);
  });
});

describe('image edits, a form', () => {
  const edit = (stream: string) => {
    const fd = new FormData();
    fd.append('model', 'image-b-1');
    fd.append('prompt', 'add a hat');
    fd.append('stream', stream);
    fd.append('image', new Blob([new Uint8Array(Buffer.from(PNG_1X1_BASE64, 'base64'))], { type: 'image/png' }), 'in.png');
    return fetch(`${t.url}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: fd });
  };

  it('stream "true": 400, the door offers no stream', async () => {
    await nothingSentOrCharged(async () => {
      const body = await expectInvalid(await edit('true'));
      expect(body.error.param).toBe('stream');
      expect(body.error.message).toContain('not offered on /v1/images/edits');
    });
  });

  it('stream "1": 400, not a form boolean', async () => {
    await nothingSentOrCharged(async () => {
      const body = await expectInvalid(await edit('1'));
      expect(body.error.message).toContain('stream must be true or false');
    });
  });

  it('stream "false": served and charged', async () => {
    const before = await t.balance();
    const res = await edit('false');
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await t.balance()).toBeLessThan(before);
  });
});

describe('deferred and background: anything but false is refused before any vendor call', () => {
  // The message shows the value as sent: the string "false" is refused, and must not read as the false it asks for.
  for (const value of [true, 'true', 'false', 1]) {
    it(`chat deferred ${JSON.stringify(value)}`, async () => {
      await nothingSentOrCharged(async () => {
        const body = await expectInvalid(
          await post(t, '/v1/chat/completions', { model: 'b-6', max_completion_tokens: 16, deferred: value, messages: ask }),
        );
        expect(body.error.message).toContain(`deferred: ${JSON.stringify(value)} is not offered`);
      });
    });
    it(`responses background ${JSON.stringify(value)}`, async () => {
      await nothingSentOrCharged(async () => {
        const body = await expectInvalid(
          await post(t, '/v1/responses', { model: 'b-5', max_output_tokens: 16, background: value, input: 'hi' }),
        );
        expect(body.error.message).toContain(`background: ${JSON.stringify(value)} is not offered`);
      });
    });
  }

  it('false is served on both', async () => {
    const chat = await post(t, '/v1/chat/completions', { model: 'b-6', max_completion_tokens: 16, deferred: false, messages: ask });
    expect(chat.status, await chat.text()).toBe(200);
    const responses = await post(t, '/v1/responses', { model: 'b-5', max_output_tokens: 16, background: false, input: 'hi' });
    expect(responses.status, await responses.text()).toBe(200);
  });
});
