// PORT=0 asks for any free port: the banner, and the file the operator CLI finds a running gateway by, name the
// port the gateway really bound (they named port 0, where nothing answers).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

let g: ChildGateway | undefined;
afterAll(() => g?.remove());

it('names the port it bound in its banner and in its data folder, and answers there', async () => {
  g = await startChildGateway({ PORT: '0' });
  const url = (await g.waitFor(/gateway listening on (http:\/\/\S+)/))[1]!;
  expect(new URL(url).port).not.toBe('0');
  expect(Number(new URL(url).port)).toBeGreaterThan(0);
  const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(10_000) });
  expect(health.status).toBe(200);
  const file = JSON.parse(readFileSync(join(g.dataDir, 'gateway.json'), 'utf8')) as { url: string };
  expect(file.url).toBe(url);
}, 60_000);
