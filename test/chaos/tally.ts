// The chaos suite's table: one row per fault kind, printed and written to test/artifacts/ (gitignored), from
// where the figures are copied to the README's reliability section.
import { mkdirSync, writeFileSync } from 'node:fs';
import { formatUsd } from '../helpers/auditor.ts';
import type { ChaosRow } from './harness.ts';

export function chaosTable(rows: readonly ChaosRow[]): string {
  // The leased column only where some call rode a budget lease (the lease-mode suite).
  const leases = rows.some((r) => r.leased > 0);
  const head = `| fault | runs | calls | answered / estimated / refused |${leases ? ' leased |' : ''} money lost | money created | holds left | estimate gap |`;
  const rule = `|---|---:|---:|---|${leases ? '---:|' : ''}---:|---:|---:|---:|`;
  const lines = rows.map(
    (r) =>
      `| ${r.fault} | ${r.runs} | ${r.calls} | ${r.answered} / ${r.estimated} / ${r.refused} |${leases ? ` ${r.leased} |` : ''} ${formatUsd(r.lostNano)} | ${formatUsd(r.createdNano)} | ${r.holdsLeft} | ${formatUsd(r.estimateGapNano)} |`,
  );
  return [head, rule, ...lines].join('\n');
}

/** Appends rows as they come (each fault kind its own test), so a failing kind still leaves the others' rows. */
export class ChaosTally {
  private readonly rows: ChaosRow[] = [];
  constructor(
    private readonly file: string,
    private readonly title: string,
  ) {}

  add(row: ChaosRow): void {
    this.rows.push(row);
    this.write();
  }

  write(): string {
    const text = `# ${this.title}\n\n${chaosTable(this.rows)}\n`;
    mkdirSync('test/artifacts', { recursive: true });
    writeFileSync(`test/artifacts/${this.file}`, text);
    return text;
  }
}
