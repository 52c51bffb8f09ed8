// Per-request state on the request itself (engine/http/request-slots.ts): each request sees its own value,
// a slot is declared once, and a request of an app that did not declare it still carries it.
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { declareRequestSlots, requestSlot } from '../../engine/http/request-slots.ts';

const seen = requestSlot<string>('test_seen');

function appWith(declared: boolean) {
  const app = Fastify();
  if (declared) declareRequestSlots(app);
  app.addHook('onRequest', async (req) => {
    if (seen.get(req) !== undefined) throw new Error('a new request already had a value');
    seen.set(req, String(req.headers['x-tag']));
  });
  app.get('/', async (req) => ({ seen: seen.get(req) }));
  return app;
}

describe('request slots', () => {
  it.each([true, false])('keep one value per request (declared on the app: %s)', async (declared) => {
    const app = appWith(declared);
    const answers = await Promise.all(['a', 'b', 'c'].map((tag) => app.inject({ url: '/', headers: { 'x-tag': tag } })));
    expect(answers.map((r) => r.json())).toEqual([{ seen: 'a' }, { seen: 'b' }, { seen: 'c' }]);
    expect(app.hasRequestDecorator('gateway_test_seen')).toBe(declared);
    await app.close();
  });

  it('refuses a name used twice, so two rooms never share a slot by accident', () => {
    expect(() => requestSlot('test_seen')).toThrow(/declared twice/);
  });
});
