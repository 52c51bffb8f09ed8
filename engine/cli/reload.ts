// `npx gateway reload`: through the admin API, or with a SIGHUP to the pid `npm start` wrote and then the report
// the gateway leaves beside it, since a signal carries no answer. Either way a refused reload exits 1 with its problems.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pidFilePath } from '../core/pid-file.ts';
import { type ReloadReport, readReloadReport, reloadReportPath } from '../core/reload-report.ts';

type Env = Record<string, string | undefined>;

export async function runReloadCommand(args: string[], env: Env = process.env): Promise<number> {
  const url = option(args, '--url');
  if (url) return reloadOverHttp(url, option(args, '--token') ?? env.GATEWAY_ADMIN_TOKEN);
  return reloadBySignal(pidFilePath(env), reloadReportPath(env));
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
  const body = (await res.json().catch(() => ({}))) as {
    ok?: boolean;
    version?: string;
    problems?: string[];
    error?: { message?: string };
  };
  if (res.ok && body.ok) {
    console.log(`reloaded: catalog version ${body.version}`);
    return 0;
  }
  console.error(
    body.problems?.length
      ? `reload refused; the running catalog stays:\n${body.problems.join('\n')}`
      : `reload failed (${res.status}): ${body.error?.message ?? ''}`,
  );
  return 1;
}

async function reloadBySignal(pidFile: string, reportFile: string): Promise<number> {
  let text: string;
  try {
    text = readFileSync(pidFile, 'utf8');
  } catch {
    console.error(
      `No running gateway found: ${pidFile} does not exist. Start it with npm start (same GATEWAY_DATA_DIR), or use --url with an admin token.`,
    );
    return 1;
  }
  const pid = Number(text.trim());
  if (!Number.isInteger(pid) || pid <= 1) {
    console.error(`${pidFile} does not hold a process id.`);
    return 1;
  }
  const sentAt = Date.now();
  try {
    process.kill(pid, 'SIGHUP');
  } catch (e) {
    const gone = (e as NodeJS.ErrnoException).code === 'ESRCH';
    console.error(
      gone ? `The gateway of ${pidFile} (pid ${pid}) is no longer running.` : `Could not signal pid ${pid}: ${(e as Error).message}`,
    );
    return 1;
  }
  console.log(`sent SIGHUP to the gateway (pid ${pid}); waiting for its result`);
  const report = await reportAfter(reportFile, pid, sentAt);
  if (!report) {
    console.error(`No result came within ${REPORT_WAIT_MS / 1000} s in ${reportFile}: the gateway's log says whether it reloaded.`);
    return 1;
  }
  if (!report.ok) {
    console.error(`reload refused; the running catalog stays:\n${report.problems.join('\n')}`);
    return 1;
  }
  console.log(`reloaded: catalog version ${report.version}: ${report.summary}`);
  return 0;
}

/** Long enough for a reload on a busy machine; a gateway too old to leave a report is waited for this long. */
const REPORT_WAIT_MS = 15_000;
const REPORT_POLL_MS = 50;

/** The first report of `pid` that began at or after the signal, or null when none came in time. */
async function reportAfter(path: string, pid: number, sentAt: number): Promise<ReloadReport | null> {
  for (const deadline = Date.now() + REPORT_WAIT_MS; Date.now() < deadline; await sleep(REPORT_POLL_MS)) {
    const report = readReloadReport(path);
    if (report && report.pid === pid && report.started_at >= sentAt) return report;
  }
  return null;
}
