// Reading Prometheus text in tests, and the label values docs/operating.md promises a dashboard's queries.
import { readFileSync } from 'node:fs';

/** The value of one series in Prometheus text, or undefined when absent. */
export function series(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** Every value of `label` among the series of `name`, sorted. */
export function labelValues(text: string, name: string, label: string): string[] {
  const values = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{(.*)\} \S+$/.exec(line);
    if (m?.[1] !== name) continue;
    const v = new RegExp(`(?:^|,)${label}="([^"]*)"`).exec(m[2]!)?.[1];
    if (v !== undefined) values.add(v);
  }
  return [...values].sort();
}

/**
 * The label values docs/operating.md lists for a series, written `` `name{label}` (`a`: …; `b`: …) ``: each
 * value in backticks inside the parentheses that follow it, sorted (a mention without values, "(below)", is passed over).
 */
export function documentedLabelValues(series: string): string[] {
  const doc = readFileSync(new URL('../../docs/operating.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
  const mention = `\`${series}\` (`;
  for (let at = doc.indexOf(mention); at >= 0; at = doc.indexOf(mention, at + 1)) {
    const listed = doc.slice(at + mention.length, doc.indexOf(')', at));
    const values = [...listed.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    if (values.length > 0) return values.sort();
  }
  throw new Error(`docs/operating.md lists no values for ${series}`);
}
