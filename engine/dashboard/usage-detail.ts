// One call's page: its usage record, the trace id, and the prices it was charged at, each with its unit, and
// the charge those prices give for the record's counts, so an owner (or a reviewer) sees how the figure came
// about and that a later price change did not touch it.
import type { AppliedPrices } from '../catalog/usage-cost.ts';
import { recomputedCharge, type UsageRecordView } from '../usage/records.ts';
import { type Html, html } from './html.ts';
import type { MessageKey, Ui } from './i18n.ts';

type KeyLabel = (id: string | null) => string;

const TOKEN_PRICES: [keyof AppliedPrices, MessageKey][] = [
  ['input', 'usage.prices.input'],
  ['cache_read', 'usage.prices.cache_read'],
  ['cache_write', 'usage.prices.cache_write'],
  ['output', 'usage.prices.output'],
];

function basisText(ui: Ui, p: AppliedPrices): string {
  const scheduled = p.scheduled_from ? ui.t('usage.prices.scheduled', { from: p.scheduled_from }) : '';
  if (p.basis === 'vendor') return ui.t('usage.prices.basis_vendor');
  if (p.basis === 'tier') return ui.t('usage.prices.basis_tier', { tokens: ui.int(p.tier_above_input_tokens ?? 0), scheduled });
  return ui.t('usage.prices.basis_base', { scheduled });
}

/** The prices as a list with units, and the charge they recompute for the record's counts. */
function pricesSection(ui: Ui, r: UsageRecordView): Html {
  const { t } = ui;
  const p = r.prices;
  if (!p) return html`<p>${t('usage.prices.none')}</p>`;
  const lines: Html[] = [];
  for (const [field, label] of TOKEN_PRICES) {
    const usd = p[field];
    if (typeof usd === 'number') lines.push(html`<li>${t('usage.prices.per_mtokens', { label: t(label), usd })}</li>`);
  }
  if (p.web_search) lines.push(html`<li>${t('usage.prices.web_search', { usd: p.web_search.usd, calls: p.web_search.calls })}</li>`);
  if (p.file_search) lines.push(html`<li>${t('usage.prices.file_search', { usd: p.file_search.usd, calls: p.file_search.calls })}</li>`);
  for (const a of p.advisor ?? []) {
    lines.push(
      html`<li>${t('usage.prices.advisor', { model: a.model, input: a.input, output: a.output, input_tokens: a.input_tokens, output_tokens: a.output_tokens })}</li>`,
    );
  }
  if (p.image !== undefined) lines.push(html`<li>${t('usage.prices.image', { usd: p.image })}</li>`);
  if (p.per_mchar !== undefined) lines.push(html`<li>${t('usage.prices.characters', { usd: p.per_mchar })}</li>`);
  if (p.vendor_nano !== undefined) lines.push(html`<li>${t('usage.prices.vendor', { nano: ui.int(BigInt(p.vendor_nano)) })}</li>`);
  const recomputed = (recomputedCharge(r) ?? 0n).toString();
  const amount = html`<span data-testid="recomputed" data-nano="${recomputed}">${t('usage.nano_usd', { nano: ui.int(BigInt(recomputed)) })}</span>`;
  return html`<div data-testid="prices" data-basis="${p.basis}"><p>${t('usage.prices.charged_at', { basis: basisText(ui, p) })}</p><ul>${lines}</ul>
<p>${ui.th('usage.prices.recomputed', { amount })}</p></div>`;
}

export function callDetail(ui: Ui, r: UsageRecordView, keyLabel: KeyLabel): Html {
  const { t } = ui;
  const item = (term: string, value: Html | string | number | null) =>
    html`<dt>${term}</dt><dd>${value === null ? '—' : typeof value === 'number' ? ui.num(value) : value}</dd>`;
  const charged = BigInt(r.charged_nano);
  return html`<dl data-generation-id="${r.id}">
${item(t('usage.item.request_id'), html`<code>${r.id}</code>`)}${item(t('col.when'), ui.time(r.created_at))}${item(t('col.key'), keyLabel(r.key_id))}
${item(t('col.model'), r.model)}${item(t('usage.col.door'), ui.word('door', r.door))}${item(t('usage.item.vendor_route'), `${r.vendor.toUpperCase()} · ${r.route ?? '—'}`)}${item(t('usage.item.fallbacks'), r.fallback_depth)}
${item(t('usage.col.input'), r.tokens.input)}${item(t('usage.item.cache_read'), r.tokens.cache_read)}${item(t('usage.item.cache_write'), r.tokens.cache_write)}
${item(t('usage.col.output'), r.tokens.output)}${item(t('usage.item.reasoning'), r.tokens.reasoning)}${item(t('usage.item.server_tools'), r.server_tool_calls)}
${item(t('usage.item.characters'), r.characters)}${item(t('usage.item.images'), r.images)}${item(t('usage.item.video_seconds'), r.video_seconds)}
${item(t('usage.item.charged'), html`<span data-testid="charge" data-nano="${r.charged_nano}">${t('usage.charged_credits', { credits: ui.exact(charged) })}</span> ${t('usage.charged_rest', { usd: ui.money(charged, 'up'), nano: ui.int(charged) })}`)}
${item(t('usage.item.duration'), t('usage.duration_ms', { ms: ui.int(r.duration_ms) }))}${item(t('usage.item.trace_id'), r.trace_id ? html`<code data-testid="trace-id">${r.trace_id}</code>` : null)}
</dl>
<h2>${t('usage.prices')}</h2>
${pricesSection(ui, r)}
<p><a href="/dashboard/usage">${t('usage.back')}</a></p>`;
}
