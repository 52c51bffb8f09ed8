// Issue 26: one embedded data folder, one process. A second gateway on a held folder exits at once naming the
// holder's pid and leaves the holder's files alone; an operator command that cannot go through the running
// gateway is refused before it opens the database; a port in use is one line; a SIGKILLed gateway's folder
// starts again at once (the OS frees the lock with the process).
import { execFile } from 'node:child_process';
import { readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

const started: ChildGateway[] = [];
afterAll(() => {
  for (const g of started.reverse()) g.remove();
});

async function start(...args: Parameters<typeof startChildGateway>): Promise<ChildGateway> {
  const g = await startChildGateway(...args);
  started.push(g);
  return g;
}

function cli(args: string[], dataDir: string): Promise<{ code: number; stderr: string }> {
  const env: Record<string, string | undefined> = { ...process.env, GATEWAY_DATA_DIR: dataDir };
  delete env.DATABASE_URL;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'engine/cli/cli.ts', ...args], { env }, (err, _stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
}

const noStack = (text: string) => expect(text).not.toMatch(/^\s+at /m);
const filePid = (dataDir: string, name: string) => readFileSync(join(dataDir, name), 'utf8');

describe('one embedded data folder, one process', () => {
  it('refuses a second gateway and a command on a held folder, names the holder, and frees the folder when the holder is killed', async () => {
    const first = await start();
    await first.waitFor(/gateway listening on/);
    const pid = first.child.pid!;

    // A second gateway on the same folder: refused, naming the holder; the holder's files stay its own.
    const second = await start({}, { dataDir: first.dataDir, apiKey: 'unused', waitForBanner: false });
    expect(await second.exited).not.toBe(0);
    expect(second.out.text).toContain(`in use by process ${pid} (gateway)`);
    expect(second.out.text).toContain('GATEWAY_DATA_DIR');
    noStack(second.out.text);
    expect(filePid(first.dataDir, 'gateway.pid').trim()).toBe(String(pid));
    expect(JSON.parse(filePid(first.dataDir, 'gateway.json')).pid).toBe(pid);

    // An operator command that cannot find the running gateway's address (as while it is still starting)
    // is refused before it opens anything, instead of opening the database beside it.
    const file = join(first.dataDir, 'gateway.json');
    renameSync(file, `${file}.aside`);
    const topup = await cli(['wallet', 'topup', 'w_any', '--credits', '5'], first.dataDir);
    renameSync(`${file}.aside`, file);
    expect(topup.code).toBe(1);
    expect(topup.stderr).toContain(`in use by process ${pid} (gateway)`);
    expect(topup.stderr).not.toContain('Aborted');
    noStack(topup.stderr);
    expect((await fetch(`${first.base}/readyz`)).status).toBe(200);

    // A port in use: one line naming it.
    const port = Number(new URL(first.base).port);
    const clash = await start({}, { port, apiKey: 'unused', waitForBanner: false });
    expect(await clash.exited).toBe(1);
    expect(clash.out.text).toContain(`port ${port} on 127.0.0.1 is already in use`);
    noStack(clash.out.text);
    // Its fresh folder got no development wallet: the next start there makes one and prints its keys, which the
    // clash never printed.
    const afterClash = await start({}, { dataDir: clash.dataDir });
    expect(afterClash.out.text).toContain('first run: created the development wallet');
    expect((await fetch(`${afterClash.base}/v1/credits`, { headers: { authorization: `Bearer ${afterClash.apiKey}` } })).status).toBe(200);
    afterClash.child.kill('SIGKILL');
    await afterClash.exited;

    // Killed without a chance to clean up: the next start on the folder serves at once, with the same keys.
    first.child.kill('SIGKILL');
    await first.exited;
    const again = await start({}, { dataDir: first.dataDir, apiKey: first.apiKey });
    const models = await fetch(`${again.base}/v1/models`, { headers: { authorization: `Bearer ${first.apiKey}` } });
    expect(models.status).toBe(200);
    expect(filePid(first.dataDir, 'gateway.pid').trim()).toBe(String(again.child.pid));
  }, 180_000);
});
