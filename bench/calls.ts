// What each measured call looks like on the wire to each kind of target: the same client call sent to our
// gateway, to the peer (routed by its x-portkey-* headers to the stub) and, for the direct baseline, the call
// the gateway itself would send the vendor (a translated chat call is a messages call at the vendor).
import type { LoadRequest } from './load.ts';

export type CallKind = 'chat-b' | 'chat-a' | 'messages';
export const CALL_KINDS: CallKind[] = ['chat-b', 'chat-a', 'messages'];

export const CALL_LABEL: Record<CallKind, string> = {
  'chat-b': 'chat, vendor B passthrough',
  'chat-a': 'chat, vendor A translated',
  messages: 'messages passthrough',
};

export type TargetKind = 'direct' | 'peer' | 'gateway';

export const MODEL = { b: 'b-5-mini', a: 'a-mid-4.5', slow: 'e-open-8b' } as const;
const MESSAGES = [{ role: 'user', content: 'benchmark call: answer in a few words' }];
const ANTHROPIC_VERSION = '2023-06-01';

/** The slow streams' chunking: `chunks` text chunks `delayMs` apart (stub path /s/<chunks>/<delayMs>). */
export interface Slow {
  chunks: number;
  delayMs: number;
}
export const slowPrefix = (s: Slow) => `/s/${s.chunks}/${s.delayMs}`;

const json = { 'content-type': 'application/json' };

/** Requests for one call kind; one per key (the load cycles through them), a single one where keys do not apply. */
export function callRequests(
  target: TargetKind,
  kind: CallKind,
  stream: boolean,
  opts: { stubUrl: string; keys?: string[] | undefined },
): LoadRequest[] {
  const keys = opts.keys?.length ? opts.keys : ['bench'];
  return keys.map((key) => callRequest(target, kind, stream, key, opts.stubUrl));
}

function callRequest(target: TargetKind, kind: CallKind, stream: boolean, key: string, stubUrl: string): LoadRequest {
  const streamFields = stream ? { stream: true } : {};
  if (kind === 'chat-b') {
    // The gateway asks vendor B for the usage chunk itself; sent direct, the call asks for it as the gateway would.
    const body = {
      model: MODEL.b,
      max_completion_tokens: 64,
      messages: MESSAGES,
      ...streamFields,
      ...(stream && target === 'direct' ? { stream_options: { include_usage: true } } : {}),
    };
    return {
      path: '/v1/chat/completions',
      headers: { ...json, authorization: `Bearer ${key}`, ...(target === 'peer' ? peerHeaders('openai', stubUrl) : {}) },
      body: JSON.stringify(body),
      ...(stream ? { endsWith: '[DONE]' } : {}),
    };
  }
  if (kind === 'chat-a' && target !== 'direct') {
    const body = { model: MODEL.a, max_tokens: 64, messages: MESSAGES, ...streamFields };
    return {
      path: '/v1/chat/completions',
      headers: {
        ...json,
        ...(target === 'peer' ? { 'x-api-key': key, ...peerHeaders('anthropic', stubUrl) } : { authorization: `Bearer ${key}` }),
      },
      body: JSON.stringify(body),
      ...(stream ? { endsWith: '[DONE]' } : {}),
    };
  }
  // messages, and a translated chat call as the vendor receives it
  const body = { model: MODEL.a, max_tokens: 64, messages: MESSAGES, ...streamFields };
  return {
    path: '/v1/messages',
    headers: {
      ...json,
      'x-api-key': key,
      'anthropic-version': ANTHROPIC_VERSION,
      ...(target === 'peer' ? peerHeaders('anthropic', stubUrl) : {}),
    },
    body: JSON.stringify(body),
    ...(stream ? { endsWith: 'message_stop' } : {}),
  };
}

/** Streams that each take chunks × delay: through the gateway a vendor E model whose route is the stub's slow path. */
export function slowRequests(target: TargetKind, slow: Slow, opts: { stubUrl: string; keys?: string[] | undefined }): LoadRequest[] {
  const keys = opts.keys?.length ? opts.keys : ['bench'];
  const body = JSON.stringify({
    model: MODEL.slow,
    max_tokens: 256,
    messages: MESSAGES,
    stream: true,
    ...(target === 'direct' ? { stream_options: { include_usage: true } } : {}),
  });
  return keys.map((key) => ({
    path: target === 'direct' ? `${slowPrefix(slow)}/v1/chat/completions` : '/v1/chat/completions',
    headers: {
      ...json,
      authorization: `Bearer ${key}`,
      ...(target === 'peer' ? peerHeaders('openai', `${opts.stubUrl}${slowPrefix(slow)}`) : {}),
    },
    body,
    endsWith: '[DONE]',
  }));
}

/** Portkey's routing: which provider's format, and the base URL (with /v1, as the providers' own bases have). */
const peerHeaders = (provider: 'openai' | 'anthropic', baseUrl: string) => ({
  'x-portkey-provider': provider,
  'x-portkey-custom-host': `${baseUrl}/v1`,
});
