// A client that leaves while its audio is on its way is not a gateway failure: the call is charged (the vendor
// made the audio) and nothing is logged at error ("request failed" would page an operator for every listener who
// hung up, as the attack helper once saw on every such call). A call whose client left still leaves its one line
// (status 499), as every call does.
import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const lines: Record<string, unknown>[] = [];
const stream = { write: (line: string) => void lines.push(JSON.parse(line)) };

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway({ logger: { level: 'info', stream }, simulator: { streamChunkDelayMs: 20 } });
});
afterAll(() => t?.close());

it('a speech client leaving before its audio arrives is logged without an error, with 499, and charged', async () => {
  const before = await t.balance();
  // The vendor answers after a second; the client gives up before any byte reaches it.
  t.sim.inject('b0', { kind: 'delay', ms: 1_000 });
  const body = JSON.stringify({ model: 'tts-1', input: 'x'.repeat(1000), voice: 'alloy' });
  await new Promise<void>((resolve) => {
    const req = request(new URL('/v1/audio/speech', t.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', 'x-request-id': 'left-before-audio' },
    });
    req.on('error', () => {});
    req.on('close', () => resolve());
    req.end(body);
    setTimeout(() => req.destroy(), 300);
  });
  await sleep(1_500);
  expect(t.received('b').length, 'the vendor was not called: the test did not exercise the case').toBeGreaterThan(0);
  const mine = lines.filter((l) => l.requestId === 'left-before-audio');
  expect(
    mine.filter((l) => (l.level as number) >= 50),
    JSON.stringify(mine),
  ).toEqual([]);
  // The call's line is written, with the status that says the client closed the request.
  expect(
    mine.find((l) => l.msg === 'call completed'),
    JSON.stringify(mine),
  ).toMatchObject({ status: 499, chargedNano: '15000000' });
  // The vendor was called and answered in full: the audio's fixed price is charged (leaving is never cheaper).
  expect(before - (await t.balance())).toBe(15_000_000n);
});

it('a streaming client leaving mid-stream still leaves its call line, with 499 and what the call was charged', async () => {
  const before = await t.balance();
  const body = JSON.stringify({ model: 'b-5', messages: [{ role: 'user', content: 'a long answer please' }], stream: true });
  await new Promise<void>((resolve, reject) => {
    const req = request(
      new URL('/v1/chat/completions', t.url),
      {
        method: 'POST',
        headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', 'x-request-id': 'left-mid-stream' },
      },
      (res) => {
        res.once('data', () => res.destroy()); // the first frame, then gone
        res.on('close', () => resolve());
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  let line: Record<string, unknown> | undefined;
  for (let i = 0; i < 100 && !line; i++) {
    line = lines.find((l) => l.requestId === 'left-mid-stream' && l.msg === 'call completed');
    await sleep(30);
  }
  expect(line, 'no line for a call whose client left').toMatchObject({ status: 499, door: 'chat', model: 'b-5' });
  const charged = BigInt(line!.chargedNano as string);
  expect(charged).toBeGreaterThan(0n);
  expect(before - (await t.balance())).toBe(charged);
  expect(lines.filter((l) => l.requestId === 'left-mid-stream' && (l.level as number) >= 50)).toEqual([]);
});
