import { describe, expect, it } from 'vitest';
import { resolveModel } from '../../engine/catalog/model-lookup.ts';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { GatewayError } from '../../engine/core/errors.ts';

const snap = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);
const NOW = new Date('2026-11-21T03:00:00Z');

function lookup(door: string, id: unknown, now = NOW): GatewayError | string {
  try {
    return resolveModel(snap.catalog, snap.config, snap.config.doors[door]!, id, now).id;
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
}

function refused(door: string, id: unknown): GatewayError {
  const r = lookup(door, id);
  if (typeof r === 'string') throw new Error(`${id} was served on ${door}`);
  return r;
}

describe('model lookup', () => {
  it('404 model_not_found names the closest known id', () => {
    const e = refused('chat', 'a-top-55');
    expect(e.status).toBe(404);
    expect(e.type).toBe('model_not_found');
    expect(e.message).toContain("'a-top-5.5'");
    expect(e.extra.suggestion).toBe('a-top-5.5');
  });

  it('400 when the model is missing', () => {
    const e = refused('chat', undefined);
    expect([e.status, e.type]).toEqual([400, 'invalid_request_error']);
  });

  // Every wrong-door pairing the spec lists: [door, model, the door path the message must name].
  const pairings: [string, string, string][] = [
    ['chat', 'image-b-1', '/v1/images/generations'],
    ['chat', 'video-d-1', '/v1/videos'],
    ['chat', 'tts-1', '/v1/audio/speech'],
    ['chat', 'text-embedding-3-small', '/v1/embeddings'],
    ['chat', 'omni-moderation-latest', '/v1/moderations'],
    ['chat', 'b-pro-5', '/v1/responses'],
    ['chat', 'b-codex-5.3', '/v1/responses'],
    ['images', 'a-top-5.5', '/v1/chat/completions'],
    ['images', 'b-5', '/v1/chat/completions'],
    ['videos', 'b-5', '/v1/chat/completions'],
    ['videos', 'image-d-1', '/v1/images/generations'],
    ['speech', 'b-5', '/v1/chat/completions'],
    ['embeddings', 'b-5', '/v1/chat/completions'],
    ['messages', 'b-5', '/v1/chat/completions'],
    ['messages', 'c-flash-3', '/v1/chat/completions'],
    ['messages', 'e-open-70b', '/v1/chat/completions'],
    ['responses', 'a-top-5.5', '/v1/chat/completions'],
    ['responses', 'd-4', '/v1/chat/completions'],
    ['responses', 'image-b-1', '/v1/images/generations'],
  ];
  it.each(pairings)('%s door refuses %s with 400 naming %s', (door, model, path) => {
    const e = refused(door, model);
    expect(e.status).toBe(400);
    expect(e.type).toBe('invalid_request_error');
    expect(e.message).toContain(path);
  });

  it('serves each model on its own doors', () => {
    expect(lookup('chat', 'a-top-5.5')).toBe('a-top-5.5');
    expect(lookup('messages', 'a-top-5.5')).toBe('a-top-5.5');
    expect(lookup('responses', 'b-pro-5.5')).toBe('b-pro-5.5');
    expect(lookup('responses', 'b-5')).toBe('b-5');
    expect(lookup('chat', 'e-open-70b')).toBe('e-open-70b');
    expect(lookup('images', 'image-d-1')).toBe('image-d-1');
  });

  it('a model past its sale-end date is refused with 404 naming its successor', () => {
    const e = refused('responses', 'o-pro-1');
    expect(e.status).toBe(404);
    expect(e.type).toBe('model_not_found');
    expect(e.message).toContain('o-pro-3');
    expect(e.extra.suggestion).toBe('o-pro-3');
  });

  it('the sale ends at 00:00 Korean time on the sale-end date', () => {
    // a-small-3.5 is sold until 2026-12-01 00:00 KST = 2026-11-30T15:00:00Z.
    expect(lookup('chat', 'a-small-3.5', new Date('2026-11-30T14:59:59Z'))).toBe('a-small-3.5');
    const after = lookup('chat', 'a-small-3.5', new Date('2026-11-30T15:00:00Z'));
    expect(after).toBeInstanceOf(GatewayError);
    expect((after as GatewayError).message).toContain('a-small-4.5');
  });

  it('never suggests a model that is no longer sold', () => {
    const e = refused('responses', 'o-pro-2');
    expect(e.extra.suggestion).not.toBe('o-pro-1');
  });
});
