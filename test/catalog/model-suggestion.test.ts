// Issue 40: the model suggested for one the catalog lacks, or the caller cannot pay for, is a misspelling's
// model when the id is one; otherwise the model most like the one asked for (the door's kind, reasoning or not
// alike, its tier word, its price range) rather than the nearest spelling.
import { describe, expect, it } from 'vitest';
import { resolveModel } from '../../engine/catalog/model-lookup.ts';
import { suggestLike } from '../../engine/catalog/model-suggestion.ts';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { GatewayError } from '../../engine/core/errors.ts';

const snap = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);
const NOW = new Date('2026-11-21T03:00:00Z');
const model = (id: string) => snap.catalog.models.get(id)!;

function suggested(door: string, id: string): string {
  try {
    resolveModel(snap.catalog, snap.config, snap.config.doors[door]!, id, NOW);
  } catch (e) {
    if (e instanceof GatewayError && e.status === 404) return e.extra.suggestion as string;
    throw e;
  }
  throw new Error(`${id} was served`);
}

describe('the model suggested for an unknown id', () => {
  it("gpt-4o-mini: the small model of the 4o family's kind (no reasoning, a like price), not the reasoning o-4-mini", () => {
    const s = suggested('chat', 'gpt-4o-mini');
    expect(s).not.toBe('o-4-mini');
    expect(s).toBe('b-4.1-mini');
    expect(model(s).effort_levels).toBeNull();
    expect(suggested('chat', 'gpt-4o')).toBe('b-4o');
  });

  it('a misspelling is still answered with the id it misspells', () => {
    expect(suggested('chat', 'b-6-minj')).toBe('b-6-mini');
    expect(suggested('chat', 'a-top-55')).toBe('a-top-5.5');
    expect(suggested('chat', 'o4-mini')).toBe('o-4-mini');
  });

  it('only a model the door serves: an image door suggests an image model, the chat door no responses-only model', () => {
    expect(model(suggested('images', 'dall-e-3')).kind).toBe('image');
    expect(model(suggested('chat', 'gpt-5-pro')).doors).toContain('chat');
  });
});

describe('the model suggested for one the credits cannot pay for', () => {
  it('is of the same kind, reasoning alike, at the nearest price, whatever its spelling', () => {
    const pool = [...snap.catalog.models.values()].filter((m) => m.kind === 'text' && m.vendor !== 'c' && m.doors.includes('chat'));
    const asked = model('c-pro-3-preview'); // reasoning, $2 / $12
    const s = suggestLike(asked, pool)!;
    expect(s.effort_levels?.length).toBeGreaterThan(0);
    const price = (m: typeof s) => (m.pricing.input ?? 0) + (m.pricing.output ?? 0);
    const gap = (m: typeof s) => Math.abs(Math.log(price(m) / price(asked)));
    const reasoningGaps = pool.filter((m) => m.effort_levels?.length).map(gap);
    expect(gap(s)).toBe(Math.min(...reasoningGaps));
  });
});
