// The gateway stops through `app.close()` alone: each room's end is a hook registered as it opened, and Fastify
// runs them in the reverse of their opening, once every call has ended. A call in flight when the stop begins is
// answered and charged before the database closes, and nothing the stop ends is used after it ended.
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { walletView } from '../helpers/ledger.ts';

let t: TestGateway | undefined;
afterEach(async () => {
  await t?.sim.close();
  t = undefined;
});

/** Replaces `obj[name]` by a function that first notes `label`, then does what it did. */
function noted<T extends object, K extends keyof T>(obj: T, name: K, order: string[], label: string, before?: () => Promise<void>): void {
  const original = obj[name] as unknown as (...args: unknown[]) => unknown;
  (obj as Record<K, unknown>)[name] = async (...args: unknown[]) => {
    order.push(label);
    await before?.();
    return original.apply(obj, args);
  };
}

describe('the gateway stops through app.close()', () => {
  it('answers and charges a call in flight, then ends each room after what uses it, the database last', async () => {
    const lines: { level: number; msg: string }[] = [];
    t = await startTestGateway({
      simulator: { streamChunkDelayMs: 150 },
      logger: { level: 'info', stream: { write: (l: string) => void lines.push(JSON.parse(l)) } },
    });
    const { gw } = t;
    const before = await t.balance();
    const order: string[] = [];
    let atDbClose: { spent: bigint; held: bigint } | null = null;
    noted(gw.ledgerAudit, 'stop', order, 'audit stopped');
    noted(gw.leases, 'close', order, 'leases drained');
    noted(gw.videos, 'stop', order, 'videos stopped');
    noted(gw.alerts, 'stop', order, 'alerts stopped');
    noted(gw.keys, 'close', order, 'keys closed');
    noted(gw.db, 'close', order, 'database closed', async () => {
      const view = await walletView(gw, t?.walletId ?? '');
      atDbClose = { spent: before - view.spendableNano, held: view.heldNano };
    });

    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'finish me' }], stream: true }),
    });
    expect(res.status).toBe(200);
    // The vendor is still streaming the answer when the stop begins.
    expect(t.sim.outcomes).toHaveLength(0);
    const stopping = gw.close();
    const logged = lines.length;
    const text = await res.text();
    await stopping;

    expect(text).toContain('[DONE]');
    // The timers stop as the stop begins; the charges drain once the call has ended, before the videos and alerts
    // stop; the audit has ended before the database closes.
    expect(order).toEqual([
      'audit stopped',
      'leases drained',
      'videos stopped',
      'alerts stopped',
      'keys closed',
      'audit stopped',
      'database closed',
    ]);
    // The call's charge was in the database before it closed, and nothing of it was still held.
    expect(atDbClose).not.toBeNull();
    expect((atDbClose as unknown as { spent: bigint }).spent).toBeGreaterThan(0n);
    expect((atDbClose as unknown as { held: bigint }).held).toBe(0n);
    // Nothing warned or failed while stopping (a room used after its database closed would).
    expect(lines.slice(logged).filter((l) => l.level >= 40)).toEqual([]);
    // A second close does nothing more.
    await gw.close();
    expect(order.filter((o) => o === 'database closed')).toHaveLength(1);
  }, 30_000);

  it("refuses a call that arrives while it stops in the call's door's error shape, and charges nothing for it", async () => {
    t = await startTestGateway();
    const { gw } = t;
    // A connection whose request has begun (its first line sent) when the stop begins, so the stop does not close
    // it as idle; the rest of the request arrives once the stop has begun.
    const body = JSON.stringify({ model: 'a-mid-4.5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] });
    const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
    await once(socket, 'connect');
    socket.write('POST /v1/messages HTTP/1.1\r\n');
    await new Promise((r) => setTimeout(r, 100));
    const stopping = gw.close();
    await new Promise((r) => setTimeout(r, 200));
    socket.end(
      `Host: 127.0.0.1\r\nx-api-key: ${t.apiKey}\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    let raw = '';
    for await (const chunk of socket) raw += String(chunk);
    await stopping;

    const [head = '', payload = ''] = raw.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 503/);
    expect(head.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(payload)).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.stringMatching(/stopping/) } });
    // It was refused before its key was read: it never reached the vendor, and nothing was held or charged.
    expect(t.sim.outcomes).toHaveLength(0);
  }, 30_000);
});
