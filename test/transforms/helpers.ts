// Builds Calls for transform tests, the way the engine does: body = structuredClone(client body).
import { everyFormatsTools, imageReadingOf } from '../../engine/catalog/wire-format.ts';
import type { Call, ResolvedRules, SseEvent } from '../../engine/core/call.ts';
import type { JsonObject, ModelEntry } from '../../engine/core/types.ts';
import { requestTransforms } from '../helpers/chain-steps.ts';

export const VENDOR_A_CHAIN = [
  'system-to-field',
  'messages-to-blocks',
  'tools-to-native',
  'cap-server-tools',
  'tool-choice-to-native',
  'stop-to-sequences',
  'default-max-tokens',
  'effort-to-native',
  'model-rules',
  'carry-cache-control',
  'chat-params-to-native',
];

export function model(over: Partial<ModelEntry> = {}): ModelEntry {
  return {
    id: 'a-high-5',
    vendor: 'a',
    kind: 'text',
    doors: ['chat', 'messages'],
    context_window: 200000,
    max_output: 64000,
    pricing: { input: 3, output: 15 },
    effort_levels: ['low', 'medium', 'high', 'max'],
    rules: [],
    sale_ends: null,
    successor: null,
    retired: false,
    data_handling: null,
    source: 'spec',
    assumed: [],
    file: 'test',
    line: 1,
    ...over,
  };
}

export interface CallOptions {
  model?: Partial<ModelEntry>;
  rules?: Partial<ResolvedRules>;
  door?: string;
  now?: string;
}

export function makeCall(client: JsonObject, opts: CallOptions = {}): Call {
  return {
    id: 'call-test',
    door: opts.door ?? 'chat',
    model: model(opts.model),
    rules: { names: [], drops: [], lowersForcedToolChoice: false, rewrites: [], refusals: [], vendorRefusals: [], ...opts.rules },
    client: structuredClone(client),
    body: structuredClone(client),
    stream: client.stream === true,
    upstreamHeaders: {},
    notes: {},
    settings: {
      defaultMaxTokens: 8192,
      serverToolCap: { calls: 10 },
      effortCarriedSince: '2026-09-01',
      now: new Date(opts.now ?? '2026-10-01T00:00:00Z'),
      images: imageReadingOf(undefined),
      tools: everyFormatsTools(),
    },
  };
}

/** Run named request transforms in order. */
export function run(names: string[], call: Call): Call {
  return names.reduce((c, name) => {
    const t = requestTransforms[name];
    if (!t) throw new Error(`no transform ${name}`);
    return t(c);
  }, call);
}

/** Translate a chat body for vendor A with the whole chain; returns the native body. */
export function toNative(client: JsonObject, opts: CallOptions = {}): JsonObject {
  return run(VENDOR_A_CHAIN, makeCall({ model: 'a-high-5', ...client }, opts)).body;
}

/** SSE events from `event:`/`data:` text, as engine/sse.ts would yield them. */
export function parseSseText(text: string): SseEvent[] {
  return text
    .split(/\n\n+/)
    .map((block) => block.trim())
    .filter(Boolean)
    .map((block) => {
      let event: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      return event ? { event, data: data.join('\n') } : { data: data.join('\n') };
    });
}

/** The JSON payloads of client frames (`data: …`), skipping [DONE]. */
export const framePayloads = (frames: string[]): JsonObject[] =>
  frames
    .map((f) => /^data: (.*)\n\n$/s.exec(f)?.[1])
    .filter((d): d is string => d !== undefined && d !== '[DONE]')
    .map((d) => JSON.parse(d) as JsonObject);
