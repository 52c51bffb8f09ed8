// SIGTERM to `npm start` itself (what a process manager or a terminal's `kill` sends) stops the gateway: npm
// passes the signal to its script's process, and the script must be the gateway, not a shell that dies alone
// while the gateway runs on, parentless, holding the embedded database's lock.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.ts';
import { alive, waitForOutput } from '../helpers/process-output.ts';

/** The processes below `pid`: npm's script shell, if any, and what it started. */
function descendants(pid: number): number[] {
  let kids: number[] = [];
  try {
    kids = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
  } catch {}
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

it('SIGTERM to `npm start` stops the gateway it started', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-npm-start-'));
  const port = await freePort();
  const npm = spawn('npm', ['start'], {
    env: { ...process.env, PORT: String(port), GATEWAY_DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { text: '' };
  let children: number[] = [];
  npm.stdout!.on('data', (d) => (out.text += d));
  npm.stderr!.on('data', (d) => (out.text += d));
  try {
    await waitForOutput(out, /listening on|dashboard:/, 60_000);
    children = descendants(npm.pid!);
    expect(children.length).toBeGreaterThan(0);
    npm.kill('SIGTERM');
    for (let i = 0; i < 100 && children.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
    expect(children.filter(alive), `still running after npm was stopped:\n${out.text}`).toEqual([]);
    expect(out.text).toMatch(/stopping/);
    const answers = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      () => true,
      () => false,
    );
    expect(answers, 'the gateway still answers').toBe(false);
  } finally {
    npm.kill('SIGKILL');
    for (const pid of children.filter(alive)) process.kill(pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 90_000);
