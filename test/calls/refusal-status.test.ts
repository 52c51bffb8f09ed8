// A refusal written in YAML states a status; the error type the client reads follows from it, on every door shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCatalog } from '../../engine/cli/catalog-cli.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree;
let t: TestGateway;
beforeAll(async () => {
  tree = tempCatalogTree();
  // One 403 refusal and one refusal without a status on each error shape (chat and messages doors).
  const extra = (indent: string) =>
    `${indent}- when: { param: forbidden_field, present: true }\n${indent}  status: 403\n${indent}  say: "forbidden_field is not yours to send."\n` +
    `${indent}- when: { param: odd_field, present: true }\n${indent}  say: "odd_field is not accepted."\n`;
  tree.edit('config/doors.yaml', (text) =>
    text
      .replace(/(chat:\n(?:.*\n)*? {2}refuse:\n)/, `$1${extra('    ')}`)
      .replace(/(messages:\n {2}path: \/v1\/messages\n(?:.*\n)*? {2}refuse:\n)/, `$1${extra('    ')}`),
  );
  t = await startTestGateway({ dirs: tree });
});
afterAll(async () => {
  await t?.close();
  tree?.remove();
});

async function post(path: string, body: Record<string, unknown>) {
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('refusal status and type', () => {
  const chatBody = { model: 'b-5', messages: [{ role: 'user', content: 'hi' }] };
  const messagesBody = { model: 'a-top-5.5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

  it('a 403 refusal answers permission_error on the chat shape, a refusal without status invalid_request_error', async () => {
    const before = await t.balance();
    const forbidden = await post('/v1/chat/completions', { ...chatBody, forbidden_field: 1 });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toMatchObject({
      type: 'permission_error',
      code: 'permission_error',
      message: 'forbidden_field is not yours to send.',
    });
    const odd = await post('/v1/chat/completions', { ...chatBody, odd_field: 1 });
    expect(odd.status).toBe(400);
    expect(odd.body.error.type).toBe('invalid_request_error');
    expect(await t.balance()).toBe(before);
  });

  it('the same on the messages shape', async () => {
    const forbidden = await post('/v1/messages', { ...messagesBody, forbidden_field: 1 });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    const odd = await post('/v1/messages', { ...messagesBody, odd_field: 1 });
    expect(odd.status).toBe(400);
    expect(odd.body.error.type).toBe('invalid_request_error');
  });

  it('a refusal status with no error type of its own is refused at load, with file and line', () => {
    const bad = tempCatalogTree();
    try {
      bad.edit('config/doors.yaml', (text) =>
        text.replace(/(chat:\n(?:.*\n)*? {2}refuse:\n)/, '$1    - when: { param: x, present: true }\n      status: 418\n      say: "no"\n'),
      );
      const line =
        bad
          .read('config/doors.yaml')
          .split('\n')
          .findIndex((l) => l.includes('status: 418')) + 1;
      expect(checkCatalog(bad).join('\n')).toContain(
        `doors.yaml:${line}: /chat/refuse/0/status must be equal to one of the allowed values (400, 403)`,
      );
    } finally {
      bad.remove();
    }
  });
});
