// `npx gateway reload`: makes the running gateway re-read catalog/ and config/. Either through its admin API
// (--url and an admin token), which answers with the result, or with a SIGHUP to the pid `npm start` wrote
// (engine/core/pid-file.ts), whose result is in the gateway's log.
import { readFileSync } from 'node:fs';
import { pidFilePath } from '../core/pid-file.ts';

type Env = Record<string, string | undefined>;

export async function runReloadCommand(args: string[], env: Env = process.env): Promise<number> {
  const url = option(args, '--url');
  if (url) return reloadOverHttp(url, option(args, '--token') ?? env.GATEWAY_ADMIN_TOKEN);
  return reloadBySignal(pidFilePath(env));
}

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function reloadOverHttp(url: string, token: string | undefined): Promise<number> {
  if (!token) {
    console.error('reload over HTTP needs the admin token: --token TOKEN or GATEWAY_ADMIN_TOKEN.');
    return 2;
  }
  const res = await fetch(new URL('/admin/v1/reload', url), { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json().catch(() => ({}))) as { ok?: boolean; version?: string; problems?: string[]; error?: { message?: string } };
  if (res.ok && body.ok) {
    console.log(`reloaded: catalog version ${body.version}`);
    return 0;
  }
  console.error(body.problems?.length ? `reload refused; the running catalog stays:\n${body.problems.join('\n')}` : `reload failed (${res.status}): ${body.error?.message ?? ''}`);
  return 1;
}

function reloadBySignal(pidFile: string): number {
  let text: string;
  try {
    text = readFileSync(pidFile, 'utf8');
  } catch {
    console.error(`No running gateway found: ${pidFile} does not exist. Start it with npm start (same GATEWAY_DATA_DIR), or use --url with an admin token.`);
    return 1;
  }
  const pid = Number(text.trim());
  if (!Number.isInteger(pid) || pid <= 1) {
    console.error(`${pidFile} does not hold a process id.`);
    return 1;
  }
  try {
    process.kill(pid, 'SIGHUP');
  } catch (e) {
    const gone = (e as NodeJS.ErrnoException).code === 'ESRCH';
    console.error(gone ? `The gateway of ${pidFile} (pid ${pid}) is no longer running.` : `Could not signal pid ${pid}: ${(e as Error).message}`);
    return 1;
  }
  console.log(`sent SIGHUP to the gateway (pid ${pid}); its log says what changed, or why nothing did.`);
  return 0;
}
