// What each served wire format says of itself (transforms/protocols/): which stream events are failures, and
// which contract type a vendor's error becomes.
import { describe, expect, it } from 'vitest';
import { vendorErrorType } from '../../engine/core/errors.ts';
import { protocols } from '../../transforms/protocols/index.ts';

const { messages, responses } = protocols;
const chat = protocols['chat-completions']!;

describe('stream failures, by format', () => {
  it.each([
    ['messages', messages!, { event: 'error', data: '{"type":"error","error":{"type":"overloaded_error"}}' }, true],
    ['messages', messages!, { data: '{"type":"error","error":{"type":"overloaded_error"}}' }, true],
    ['messages', messages!, { event: 'message_start', data: '{"type":"message_start"}' }, false],
    ['responses', responses!, { event: 'response.failed', data: '{"type":"response.failed"}' }, true],
    ['responses', responses!, { data: '{"type":"error","code":"server_error"}' }, true],
    ['responses', responses!, { event: 'response.created', data: '{"type":"response.created"}' }, false],
    ['chat-completions', chat, { data: '{"error":{"message":"boom","type":"server_error"}}' }, true],
    ['chat-completions', chat, { data: '{"error":null,"choices":[]}' }, false],
    ['chat-completions', chat, { data: '{"id":"x","choices":[{"delta":{"content":"error"}}]}' }, false],
    ['chat-completions', chat, { data: '[DONE]' }, false],
  ])('%s: %j is a failure: %s', (_name, format, event, failed) => {
    expect(format.isStreamError?.(event)).toBe(failed);
  });

  it('formats that answer whole declare no stream failures', () => {
    for (const name of ['images', 'embeddings', 'speech', 'moderations', 'video-jobs'])
      expect(protocols[name]?.isStreamError).toBeUndefined();
  });
});

describe("a vendor's error type, as the contract names it", () => {
  it.each([
    ['messages', 'overloaded_error', 400, 'upstream_error'],
    ['messages', 'not_found_error', 404, 'not_found_error'],
    ['messages', 'never_heard_of_it', 404, 'not_found_error'],
    ['messages', undefined, 413, 'request_too_large'],
    ['chat-completions', 'insufficient_quota', 400, 'upstream_error'],
    ['chat-completions', 'invalid_request_error', 422, 'invalid_request_error'],
    ['chat-completions', 'brand_new', 409, 'conflict_error'],
    ['chat-completions', 'brand_new', 418, 'invalid_request_error'],
  ])('%s %s at %i → %s', (name, type, status, expected) => {
    const format = protocols[name]!;
    expect(vendorErrorType(type, format.errors.types, status)).toBe(expected);
  });

  it('reads the type and message wherever each format writes them', () => {
    const body = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
    expect(messages!.errors.read(body)).toEqual({ type: 'overloaded_error', message: 'Overloaded' });
    expect(chat.errors.read({ error: { message: 'm', type: 't', code: null } })).toEqual({ type: 't', message: 'm' });
    expect(chat.errors.read('not json')).toEqual({});
  });
});
