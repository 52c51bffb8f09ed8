// What engine/gateway.ts relies on for its stop: Fastify runs preClose hooks in the order they were registered,
// as the stop begins, and onClose hooks in the reverse, once the server has closed and every request has ended.
// A Fastify that ordered them otherwise would close the database under the rooms that use it.
import { request } from 'node:http';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

describe("Fastify's close hooks", () => {
  it('runs preClose in order as the stop begins, onClose in reverse after the request in flight has ended', async () => {
    const order: string[] = [];
    const app = Fastify({ forceCloseConnections: 'idle' });
    app.addHook('preClose', async () => void order.push('preClose 1'));
    app.addHook('onClose', async () => void order.push('onClose 1'));
    app.addHook('preClose', async () => void order.push('preClose 2'));
    app.addHook('onClose', async () => void order.push('onClose 2'));
    let started: () => void = () => undefined;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    app.get('/slow', async () => {
      started();
      await new Promise((r) => setTimeout(r, 200));
      order.push('request ended');
      return 'ok';
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const answered = new Promise<string>((resolve, reject) => {
      request(`${url}/slow`, { agent: false }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(body));
      })
        .on('error', reject)
        .end();
    });
    await inFlight;
    await app.close();
    expect(await answered).toBe('ok');
    expect(order).toEqual(['preClose 1', 'preClose 2', 'request ended', 'onClose 2', 'onClose 1']);
  });
});
