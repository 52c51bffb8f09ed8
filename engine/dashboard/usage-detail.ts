// One call's page: its usage record, the trace id, and the prices it was charged at, each with its unit, and
// the charge those prices give for the record's counts, so an owner (or a reviewer) sees how the figure came
// about and that a later price change did not touch it.
import type { AppliedPrices } from '../catalog/usage-cost.ts';
import { recomputedCharge, type UsageRecordView } from '../usage/records.ts';
import { usdOfNano } from './amounts.ts';
import { exactCredits, html, koreanTime, type Html } from './html.ts';

type KeyLabel = (id: string | null) => string;

const TOKEN_PRICES: [keyof AppliedPrices, string][] = [
  ['input', 'Input'],
  ['cache_read', 'Cached input read'],
  ['cache_write', 'Cache write'],
  ['output', 'Output'],
];

function basisText(p: AppliedPrices): string {
  const scheduled = p.scheduled_from ? `, the scheduled price from ${p.scheduled_from}` : '';
  if (p.basis === 'vendor') return 'the charge the vendor stated';
  if (p.basis === 'tier') return `the tier above ${(p.tier_above_input_tokens ?? 0).toLocaleString('en-US')} input tokens${scheduled}`;
  return `the base price${scheduled}`;
}

/** The prices as a list with units, and the charge they recompute for the record's counts. */
export function pricesSection(r: UsageRecordView): Html {
  const p = r.prices;
  if (!p) return html`<p>This call was recorded before prices were kept with each call.</p>`;
  const lines: Html[] = [];
  for (const [field, label] of TOKEN_PRICES) {
    const usd = p[field];
    if (typeof usd === 'number') lines.push(html`<li>${label}: $${usd} per 1M tokens</li>`);
  }
  if (p.web_search) lines.push(html`<li>Web search: $${p.web_search.usd} per call × ${p.web_search.calls}</li>`);
  if (p.file_search) lines.push(html`<li>File search: $${p.file_search.usd} per call × ${p.file_search.calls}</li>`);
  for (const a of p.advisor ?? []) lines.push(html`<li>Advisor ${a.model}: $${a.input} / $${a.output} per 1M tokens × ${a.input_tokens} / ${a.output_tokens}</li>`);
  if (p.image !== undefined) lines.push(html`<li>Image: $${p.image} each</li>`);
  if (p.per_mchar !== undefined) lines.push(html`<li>Characters: $${p.per_mchar} per 1M</li>`);
  if (p.vendor_nano !== undefined) lines.push(html`<li>Vendor's charge: ${p.vendor_nano} nano-USD</li>`);
  const recomputed = recomputedCharge(r) ?? 0n;
  return html`<div data-testid="prices" data-basis="${p.basis}"><p>Charged at ${basisText(p)}:</p><ul>${lines}</ul>
<p>These prices give <span data-testid="recomputed" data-nano="${recomputed.toString()}">${recomputed.toString()} nano-USD</span> for this call's counts.</p></div>`;
}

export function callDetail(r: UsageRecordView, keyLabel: KeyLabel): Html {
  const item = (term: string, value: Html | string | number | null) => html`<dt>${term}</dt><dd>${value ?? '—'}</dd>`;
  return html`<dl data-generation-id="${r.id}">
${item('Request id', html`<code>${r.id}</code>`)}${item('When', koreanTime(r.created_at))}${item('Key', keyLabel(r.key_id))}
${item('Model', r.model)}${item('Door', r.door)}${item('Vendor and route', `${r.vendor.toUpperCase()} · ${r.route ?? '—'}`)}${item('Fallbacks', r.fallback_depth)}
${item('Input tokens', r.tokens.input)}${item('Cached input tokens read', r.tokens.cache_read)}${item('Cache write tokens', r.tokens.cache_write)}
${item('Output tokens', r.tokens.output)}${item('Reasoning tokens', r.tokens.reasoning)}${item('Server tool calls', r.server_tool_calls)}
${item('Characters', r.characters)}${item('Images', r.images)}${item('Video seconds', r.video_seconds)}
${item('Charged', html`<span data-testid="charge" data-nano="${r.charged_nano}">${exactCredits(BigInt(r.charged_nano))} credits</span> (${usdOfNano(BigInt(r.charged_nano))}; ${r.charged_nano} nano-USD)`)}
${item('Duration', `${r.duration_ms} ms`)}${item('Trace id', r.trace_id ? html`<code data-testid="trace-id">${r.trace_id}</code>` : null)}
</dl>
<h2>Prices</h2>
${pricesSection(r)}
<p><a href="/dashboard/usage">Back to usage</a></p>`;
}
