// The usage chart: credits per Korean day for the last 30 days, stacked per key or per model, as inline
// SVG (no script, no external file), with the same figures as a table for screen readers and for copying.
import { shortDay } from './format.ts';
import { type Html, html } from './html.ts';
import { type Ui, uiOf } from './i18n.ts';

interface DaySeries {
  day: string;
  name: string;
  nano: bigint;
}

const PALETTE = ['#3b6fd8', '#d8733b', '#2f9e6a', '#b5469b', '#c9a227', '#5b5bb0', '#d14b4b', '#3a9fb0', '#7d8c2f', '#8a5a3c'];
// A narrower drawing with larger type than a desktop needs: the SVG scales to its box, and at phone width
// (the box at least MIN_BOX_PX, scrolling inside it below that) 13 units still read as about 10 px.
const WIDTH = 600;
const HEIGHT = 240;
const BOTTOM = 30;
const TOP = 16;
const FONT = 13;
/** Width of one character of the axis labels (digits, commas, a dot) in drawing units, erring wide. */
const CHAR_WIDTH = FONT * 0.62;

/** The left margin that holds the widest axis label, so a label like 198,981.960 is never cut at the edge. */
const leftMargin = (labels: string[]) => Math.ceil(Math.max(...labels.map((l) => l.length)) * CHAR_WIDTH) + 12;

/** The series in first-seen order with a colour each (the palette repeats past ten). */
function colours(points: DaySeries[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of points) if (!out.has(p.name)) out.set(p.name, PALETTE[out.size % PALETTE.length]!);
  return out;
}

export function usageChart(
  days: string[],
  points: DaySeries[],
  label: (name: string) => string,
  per: 'key' | 'model',
  ui: Ui = uiOf('en'),
): Html {
  const { t } = ui;
  const exactCredits = ui.exact;
  const perText = t(per === 'key' ? 'usage.per_key' : 'usage.per_model');
  const colour = colours(points);
  const totals = new Map<string, bigint>(days.map((d) => [d, 0n]));
  for (const p of points) totals.set(p.day, (totals.get(p.day) ?? 0n) + p.nano);
  const max = [...totals.values()].reduce((a, b) => (b > a ? b : a), 0n);
  const maxLabel = exactCredits(max);
  const LEFT = leftMargin([maxLabel, '0']);
  const plotH = HEIGHT - BOTTOM - TOP;
  const slot = (WIDTH - LEFT) / days.length;
  const scale = (nano: bigint) => (max === 0n ? 0 : (Number(nano) / Number(max)) * plotH);

  const bars: Html[] = [];
  days.forEach((day, i) => {
    let y = HEIGHT - BOTTOM;
    for (const p of points.filter((q) => q.day === day)) {
      const h = Math.max(scale(p.nano), p.nano > 0n ? 1 : 0);
      y -= h;
      bars.push(
        html`<rect x="${(LEFT + i * slot + 2).toFixed(1)}" y="${y.toFixed(1)}" width="${(slot - 4).toFixed(1)}" height="${h.toFixed(1)}" fill="${colour.get(p.name)}" data-day="${day}" data-series="${label(p.name)}" data-nano="${p.nano.toString()}"><title>${t('chart.bar', { day: ui.day(day), series: label(p.name), credits: exactCredits(p.nano) })}</title></rect>`,
      );
    }
  });
  const dayLabels = days.map((d, i) =>
    i % 5 === 4 || i === days.length - 1
      ? // The last day's label ends at the right edge rather than centring past it.
        i === days.length - 1
        ? html`<text x="${WIDTH - 1}" y="${HEIGHT - 10}" text-anchor="end" font-size="${FONT}" fill="currentColor">${shortDay(ui.locale, d)}</text>`
        : html`<text x="${(LEFT + i * slot + slot / 2).toFixed(1)}" y="${HEIGHT - 10}" text-anchor="middle" font-size="${FONT}" fill="currentColor">${shortDay(ui.locale, d)}</text>`
      : '',
  );
  const summary = t('chart.summary', { from: ui.day(days[0]!), to: ui.day(days.at(-1)!), per: perText, max: exactCredits(max) });

  const rows = days.flatMap((day) =>
    points
      .filter((p) => p.day === day)
      .map(
        (p) =>
          html`<tr data-day="${day}"><td>${ui.day(day)}</td><td>${label(p.name)}</td><td class="num" data-nano="${p.nano.toString()}">${exactCredits(p.nano)}</td></tr>`,
      ),
  );

  return html`<figure class="scroll">
<svg role="img" aria-labelledby="chart-desc" viewBox="0 0 ${WIDTH} ${HEIGHT}" class="chart" data-testid="usage-chart">
<desc id="chart-desc">${summary}</desc>
<line x1="${LEFT}" y1="${HEIGHT - BOTTOM}" x2="${WIDTH}" y2="${HEIGHT - BOTTOM}" stroke="currentColor" stroke-opacity=".4"/>
<text x="${LEFT - 6}" y="${TOP + FONT / 2}" text-anchor="end" font-size="${FONT}" fill="currentColor" data-testid="axis-max">${maxLabel}</text>
<text x="${LEFT - 6}" y="${HEIGHT - BOTTOM}" text-anchor="end" font-size="${FONT}" fill="currentColor">0</text>
${bars}${dayLabels}
</svg>
<figcaption>${summary}
<span class="legend">${[...colour].map(([name, c]) => html` <span class="entry"><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${c}"/></svg> ${label(name)}</span>`)}</span></figcaption>
</figure>
<details><summary>${t('chart.as_table')}</summary>
${rows.length ? html`<div class="scroll"><table><caption>${t('chart.caption', { per: perText })}</caption><thead><tr><th scope="col">${t('chart.col.day')}</th><th scope="col">${t(per === 'key' ? 'col.key' : 'col.model')}</th><th scope="col" class="num">${t('chart.col.credits')}</th></tr></thead><tbody>${rows}</tbody></table></div>` : html`<p>${t('chart.none', { n: days.length })}</p>`}
</details>`;
}
