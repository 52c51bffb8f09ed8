// The result of the last signalled reload, left beside the pid file: a SIGHUP carries no answer, so
// `npx gateway reload` waits for a report begun after its signal and the operator learns at the prompt whether the
// new YAML was refused.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pidFilePath } from './pid-file.ts';

const RELOAD_REPORT_NAME = 'gateway.reload.json';

export interface ReloadReport {
  /** The pid in the pid file: the process a SIGHUP goes to (the primary, when there are workers). */
  pid: number;
  /** When the reload began, in ms since the epoch: a report that began after a signal answers that signal. */
  started_at: number;
  ok: boolean;
  /** The catalog version in force afterwards. */
  version: number;
  /** `file:line: reason`, when refused. */
  problems: string[];
  /** What changed, in the words of the reload log line. */
  summary: string;
}

export const reloadReportPath = (env: Record<string, string | undefined>): string => join(dirname(pidFilePath(env)), RELOAD_REPORT_NAME);

/** Written whole under another name and renamed, so a reader never sees half of it. */
export function writeReloadReport(env: Record<string, string | undefined>, report: ReloadReport): void {
  const path = reloadReportPath(env);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(report, null, 2)}\n`);
  renameSync(temporary, path);
}

/** The report there now, or null when there is none (or not one of ours). */
export function readReloadReport(path: string): ReloadReport | null {
  try {
    const r = JSON.parse(readFileSync(path, 'utf8')) as Partial<ReloadReport>;
    const whole = typeof r.pid === 'number' && typeof r.started_at === 'number' && typeof r.ok === 'boolean' && Array.isArray(r.problems);
    return whole ? (r as ReloadReport) : null;
  } catch {
    return null;
  }
}
