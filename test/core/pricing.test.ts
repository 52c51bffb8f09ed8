import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { costOfUsage, pricesAt, pricesForPrompt, textBounds, textReservation, tokenCost } from '../../engine/catalog/pricing.ts';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { emptyUsage, type JsonObject, type Usage } from '../../engine/core/types.ts';

const snap = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);
const model = (id: string) => snap.catalog.models.get(id)!;
const NOW = new Date('2026-11-21T03:00:00Z');
const ctx = (at = NOW) => ({ billing: snap.config.billing, modelById: (id: string) => snap.catalog.models.get(id), at });
const usage = (u: Partial<Usage>): Usage => ({ ...emptyUsage(), ...u });

describe('prices', () => {
  it('a price per 1M tokens is price × 1000 nano per token, rounded up', () => {
    expect(tokenCost(1, 1.75)).toBe(1750n);
    expect(tokenCost(1_000_000, 30)).toBe(30_000_000_000n);
    expect(tokenCost(1, 0.02)).toBe(20n);
    expect(tokenCost(3, 0.0001)).toBe(1n); // 0.3 nano rounds up
    expect(tokenCost(0, 5)).toBe(0n);
  });

  it('the 272K tier applies once the whole prompt is above the threshold', () => {
    const pro = model('b-pro-5.4');
    expect(pricesForPrompt(pro, NOW, 272_000)).toMatchObject({ input: 30, output: 180 });
    expect(pricesForPrompt(pro, NOW, 272_001)).toMatchObject({ input: 60, output: 270 });
    // 300K input + 10 output at the tier price: 300000 × 60 + 10 × 270 (× 1000 nano).
    expect(costOfUsage(pro, usage({ input_tokens: 300_000, output_tokens: 10 }), ctx())).toBe(18_002_700_000n);
    // Cached tokens count toward the threshold.
    expect(costOfUsage(pro, usage({ input_tokens: 100_000, cache_read_tokens: 200_000 }), ctx())).toBeGreaterThan(
      costOfUsage(pro, usage({ input_tokens: 100_000 }), ctx()) * 2n,
    );
  });

  it('a scheduled price takes effect at 00:00 Korean time on its date', () => {
    const flash = model('c-flash-3');
    expect(pricesAt(flash, new Date('2026-12-31T14:59:59Z'))).not.toMatchObject({ input: 1.5, output: 7.5 });
    expect(pricesAt(flash, new Date('2026-12-31T15:00:00Z'))).toMatchObject({ input: 1.5, output: 7.5 });
  });

  it('cache reads and writes are priced by their own buckets', () => {
    const a = model('a-top-5.5'); // 5 / 25, cache read 0.5, cache write 6.25
    const cost = costOfUsage(a, usage({ input_tokens: 1000, output_tokens: 200, cache_read_tokens: 300, cache_write_tokens: 100 }), ctx());
    expect(cost).toBe(BigInt(1000 * 5000 + 200 * 25000 + 300 * 500 + 100 * 6250));
  });

  it('odd counts from a vendor are rounded up, never thrown on', () => {
    expect(costOfUsage(model('a-top-5.5'), usage({ web_search_calls: 1.5 }), ctx())).toBe(20_000_000n);
    expect(costOfUsage(model('a-top-5.5'), usage({ output_tokens: 0.5 }), ctx())).toBe(25_000n);
    expect(costOfUsage(model('a-top-5.5'), usage({ output_tokens: Number.NaN, input_tokens: -3 }), ctx())).toBe(0n);
  });

  it('server-side tools are billed per call', () => {
    expect(costOfUsage(model('a-top-5.5'), usage({ web_search_calls: 2 }), ctx())).toBe(20_000_000n);
    expect(costOfUsage(model('b-5'), usage({ file_search_calls: 4 }), ctx())).toBe(10_000_000n);
  });
});

describe('reservation', () => {
  it('reserves max_tokens at the output price and the body bound at the worst input price', () => {
    const a = model('a-top-5.5');
    const body: JsonObject = { model: 'a-top-5.5', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] };
    const b = textBounds(a, body, snap.config.billing);
    expect(b.outputTokens).toBe(100);
    expect(b.inputTokens).toBeGreaterThan(JSON.stringify(body).length);
    expect(textReservation(a, body, ctx())).toBe(tokenCost(b.inputTokens, 6.25) + tokenCost(100, 25));
  });

  it('without max_tokens the model maximum is reserved; the context window caps the input bound', () => {
    const d = model('d-3');
    const huge = 'x'.repeat(2_000_000);
    const b = textBounds(d, { messages: [{ role: 'user', content: huge }] }, snap.config.billing);
    expect(b.outputTokens).toBe(d.max_output);
    expect(b.inputTokens).toBe(d.context_window);
  });

  it('a prompt that could pass the threshold is reserved at the tier price', () => {
    const pro = model('b-pro-5.4');
    const body: JsonObject = { input: 'y'.repeat(400_000), max_output_tokens: 10 };
    expect(textReservation(pro, body, ctx())).toBeGreaterThanOrEqual(tokenCost(400_000, 60) + tokenCost(10, 270));
  });

  it('never reserves less than any usage the vendor can report for the body (property)', () => {
    const ids = [...snap.catalog.models.values()].filter((m) => m.kind === 'text').map((m) => m.id);
    fc.assert(
      fc.property(
        fc.constantFrom(...ids),
        fc.string({ maxLength: 3000 }),
        fc.integer({ min: 1, max: 200_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (id, text, maxTokens, inFrac, outFrac) => {
          const m = model(id);
          const body: JsonObject = { messages: [{ role: 'user', content: text }], max_tokens: maxTokens };
          const b = textBounds(m, body, snap.config.billing);
          // Any split of the bounded input into cache buckets, any output up to the bound.
          const input = Math.floor(b.inputTokens * inFrac);
          const u = usage({ input_tokens: input, cache_write_tokens: b.inputTokens - input, output_tokens: Math.floor(b.outputTokens * outFrac) });
          expect(costOfUsage(m, u, ctx())).toBeLessThanOrEqual(textReservation(m, body, ctx()));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('measuring a body for the reservation', () => {
  it('counts image parts as the image allowance, by URL or inline, and long text byte for byte', async () => {
    const { measureBody } = await import('../../engine/catalog/pricing.ts');
    const b64 = 'A'.repeat(50_000);
    expect(measureBody({ content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } }] }).images).toBe(1);
    expect(measureBody({ content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }).images).toBe(1);
    expect(measureBody({ content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64 } }] }).images).toBe(1);
    const text = measureBody({ content: b64 });
    expect(text.images).toBe(0);
    expect(text.bytes).toBeGreaterThanOrEqual(50_000);
  });
});
