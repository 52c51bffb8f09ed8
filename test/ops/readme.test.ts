// The README's code runs as shown: its curl commands and its SDK snippets, against a gateway started as
// `npm start` starts it (the embedded database, the bundled vendors), with the keys its first start printed.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

const run = promisify(execFile);
const README = readFileSync('README.md', 'utf8');

/** The README's fenced blocks of one language, in order. */
function blocks(lang: string): string[] {
  return [...README.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]!);
}

/** The shell commands of a block: continuation lines joined, comments and the `export` of placeholders left out. */
function commands(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith('export '));
}

let gw: ChildGateway;
let env: Record<string, string>;
beforeAll(async () => {
  gw = await startChildGateway();
  const managementKey = (await gw.waitFor(/management key:\s+(sk-svcm-\S+)/))[1]!;
  await gw.waitFor(/gateway listening on/);
  env = { ...(process.env as Record<string, string>), K: gw.apiKey, M: managementKey, B: gw.base };
}, 90_000);
afterAll(() => gw?.remove());

describe('the README', () => {
  const curls = blocks('sh')
    .flatMap(commands)
    .filter((c) => c.startsWith('curl '));

  it('shows curl commands and SDK snippets to run', () => {
    expect(curls.length).toBeGreaterThanOrEqual(6);
    expect(blocks('js').length).toBe(2);
  });

  it.each(curls)('%s', async (command) => {
    // --fail-with-body: an HTTP error fails the command, with the gateway's answer in the message.
    const { stdout } = await run('bash', ['-c', command.replace(/^curl /, 'curl --fail-with-body ')], { env });
    expect(stdout.length).toBeGreaterThan(0);
    expect(() => JSON.parse(stdout)).not.toThrow();
  });

  it.each(blocks('js').map((code, i) => [i, code] as const))('SDK snippet %i', async (i, code) => {
    // Written inside the project, so the SDKs resolve from its node_modules.
    mkdirSync('test/artifacts', { recursive: true });
    const file = join('test/artifacts', `readme-snippet-${i}.mjs`);
    writeFileSync(file, code);
    const { stdout } = await run(process.execPath, [file], { env });
    expect(stdout.trim().length).toBeGreaterThan(0);
  });
});
