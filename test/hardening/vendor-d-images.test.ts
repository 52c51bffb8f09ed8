// Vendor D image models receive model, prompt and n, and never size: n is stated even when the client omits it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t.close());

describe('vendor D images', () => {
  it('receive n: 1 when the client omits n, and never size', async () => {
    t.sim.reset();
    const res = await post(t, '/v1/images/generations', { model: 'image-d-1', prompt: 'a cat', size: '512x512' });
    expect(res.status, await res.text()).toBe(200);
    const [seen] = t.received('d');
    expect(seen!.body).toEqual({ model: 'image-d-1', prompt: 'a cat', n: 1 });
  });

  it('receive the client n as sent', async () => {
    t.sim.reset();
    const res = await post(t, '/v1/images/generations', { model: 'image-d-2', prompt: 'a dog', n: 1 });
    expect(res.status, await res.text()).toBe(200);
    expect(t.received('d')[0]!.body).toEqual({ model: 'image-d-2', prompt: 'a dog', n: 1 });
  });

  it('vendor B images are unchanged: no n added', async () => {
    t.sim.reset();
    const res = await post(t, '/v1/images/generations', { model: 'image-b-1', prompt: 'a dog' });
    expect(res.status, await res.text()).toBe(200);
    expect(t.received('b')[0]!.body).not.toHaveProperty('n');
  });
});
