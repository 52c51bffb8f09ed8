// Shared pieces of the end-to-end tests: raw HTTP helpers over loopback, the official SDK clients pointed at
// the in-process gateway, and the catalog prices the billing tests compute their expectations from.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { expect } from 'vitest';
import type { TestGateway } from '../helpers/gateway.ts';

export const A_VERSION = { 'anthropic-version': '2023-06-01' };

export function post(t: TestGateway, path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: signal ?? null,
  });
}

/** The chat-completions SDK: base URL ends in /v1. No SDK retries, so every vendor call seen is the gateway's. */
export const openai = (t: TestGateway) => new OpenAI({ apiKey: t.apiKey, baseURL: `${t.url}/v1`, maxRetries: 0 });

/** The native messages SDK: base URL WITHOUT /v1 (it appends /v1/messages itself). */
export const anthropic = (t: TestGateway) => new Anthropic({ apiKey: t.apiKey, baseURL: t.url, maxRetries: 0 });

/** Parse an SSE body into its `data:` payloads (JSON where possible), with the event names. */
export function parseSse(text: string): { event?: string | undefined; data: any }[] {
  const out: { event?: string | undefined; data: any }[] = [];
  for (const frame of text.split(/\n\n/)) {
    if (frame.trim() === '') continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of frame.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    const raw = data.join('\n');
    let parsed: any = raw;
    try {
      parsed = JSON.parse(raw);
    } catch {
      /* [DONE] and the like stay text */
    }
    out.push({ event, data: parsed });
  }
  return out;
}

/**
 * Catalog prices, USD per 1M tokens, copied by hand from catalog/*.yaml so the billing tests do not reuse the
 * gateway's own pricing code. A token priced at P USD per 1M costs P × 1000 nano-USD.
 */
export const PRICES = {
  'a-top-5.5': { input: 5, output: 25, cache_read: 0.5, cache_write: 6.25 }, // catalog/vendor-a.yaml
  'b-5': { input: 1.25, output: 10, cache_read: 0.125 }, // catalog/vendor-b.yaml
  'b-pro-5.4': { input: 30, output: 180, tier: { above: 272_000, input: 60, output: 270 } }, // catalog/vendor-b.yaml
} as const;

/** tokens × price-per-1M × 1000 nano, exact for the figures used (asserted integral). */
export function nano(tokens: number, perMtok: number): bigint {
  const v = tokens * perMtok * 1000;
  expect(Number.isInteger(v), `${tokens} × ${perMtok} × 1000 is not a whole nano`).toBe(true);
  return BigInt(v);
}

export const WEB_SEARCH_NANO = 10_000_000n; // $0.01 per search (spec, config/billing.yaml)

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Asserts a gateway refusal: 400 invalid_request_error in the door's shape. */
export async function expectInvalid(res: Response, shape: 'chat' | 'messages' = 'chat'): Promise<any> {
  const text = await res.text();
  expect(res.status, text).toBe(400);
  const body = JSON.parse(text);
  if (shape === 'messages') {
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
  } else {
    expect(body.error.type).toBe('invalid_request_error');
  }
  return body;
}
