// SIGTERM ends the process promptly: an idle keep-alive client does not hold it for the keep-alive timeout,
// and a call in flight still finishes (and is answered) before the process exits.
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

let gw: ChildGateway | undefined;
afterEach(() => gw?.remove());

function get(agent: Agent, url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('shutdown', () => {
  it('exits within 2 s of SIGTERM while a keep-alive client holds an idle connection', async () => {
    gw = await startChildGateway();
    const agent = new Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
    const res = await get(agent, `${gw.base}/v1/models`, { authorization: `Bearer ${gw.apiKey}` });
    expect(res.status).toBe(200);
    // The socket stays open and idle in the agent's pool.
    expect(Object.values(agent.freeSockets).flat().length).toBe(1);
    const sent = Date.now();
    gw.child.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
    expect(Date.now() - sent).toBeLessThan(2000);
    agent.destroy();
  }, 60_000);

  it('lets a call in flight finish and answers it before exiting', async () => {
    gw = await startChildGateway();
    const agent = new Agent({ keepAlive: true });
    const call = fetch(`${gw.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'finish me' }], stream: true }),
    });
    const res = await call;
    gw.child.kill('SIGTERM');
    const text = await res.text();
    const answered = Date.now();
    expect(res.status).toBe(200);
    expect(text).toContain('[DONE]');
    expect(await gw.exited).toBe(0);
    expect(Date.now() - answered).toBeLessThan(2000);
    agent.destroy();
  }, 60_000);
});
