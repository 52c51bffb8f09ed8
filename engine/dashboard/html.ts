// Safe HTML by default: `html` is a tagged template whose interpolations are escaped unless they are
// already Html (a fragment built the same way). Names, models and every other value the owner or a
// client chose are therefore escaped without anyone having to remember to.
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Part = Html | string | number | bigint | boolean | null | undefined | readonly Part[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]);

function render(part: Part): string {
  if (part instanceof Html) return part.text;
  if (Array.isArray(part)) return part.map(render).join('');
  if (part === null || part === undefined || part === false) return '';
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Exact credits of a nano-USD amount (1 credit = 1,000 nano-USD): three decimals, never rounded. */
export function exactCredits(nano: bigint): string {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  const whole = (abs / 1000n).toLocaleString('en-US');
  const frac = (abs % 1000n).toString().padStart(3, '0');
  return `${sign}${whole}.${frac}`;
}

/** Whole credits with thousands separators. */
export const credits = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));

/** An instant as the owner reads it: Korean time, to the minute (the ISO instant in a title attribute). */
export function koreanTime(iso: string | null | undefined): Html {
  if (!iso) return html`<span aria-label="never">—</span>`;
  const d = new Date(iso);
  const kst = new Date(d.getTime() + 9 * 3_600_000).toISOString().slice(0, 16).replace('T', ' ');
  return html`<time datetime="${d.toISOString()}">${kst} KST</time>`;
}
