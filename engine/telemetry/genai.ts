// The names a call's span carries: the OpenTelemetry GenAI semantic conventions' attributes (written out here:
// the conventions moved to their own repository and the package marks its copies deprecated), the proposed
// cost attributes, and the gateway's own under `gateway.`.

import { GatewayError } from '../core/errors.ts';
import type { ModelEntry, Usage } from '../core/types.ts';

export const GENAI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  requestStream: 'gen_ai.request.stream',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  timeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheWriteTokens: 'gen_ai.usage.cache_creation.input_tokens',
  reasoningTokens: 'gen_ai.usage.reasoning.output_tokens',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  // Proposed in semantic-conventions-genai (gen_ai.usage.cost.*): the amount this gateway charged, priced by it.
  costAmount: 'gen_ai.usage.cost.amount',
  costCurrency: 'gen_ai.usage.cost.currency',
  costSource: 'gen_ai.usage.cost.source',
} as const;

export const GATEWAY = {
  door: 'gateway.door',
  requestId: 'gateway.request_id',
  route: 'gateway.route',
  fallbackDepth: 'gateway.fallback_depth',
  attempt: 'gateway.attempt',
  retryReason: 'gateway.retry_reason',
  keyPrefix: 'gateway.key_prefix',
  walletId: 'gateway.wallet_id',
  chargeNano: 'gateway.charge.nano_usd',
  heldNano: 'gateway.hold.nano_usd',
  settleOutcome: 'gateway.settle.outcome',
  videoId: 'gateway.video.id',
  videoStatus: 'gateway.video.status',
  videoSeconds: 'gateway.video.seconds',
} as const;

export const HTTP_STATUS = 'http.response.status_code';
export const ERROR_TYPE = 'error.type';

/** The conventions' operation for a model's kind: chat for text, embeddings, and content generation for media. */
export function operationOf(model: Pick<ModelEntry, 'kind'>): string {
  if (model.kind === 'text') return 'chat';
  if (model.kind === 'embedding') return 'embeddings';
  return 'generate_content';
}

/**
 * The usage as the conventions count it: input tokens include cache reads and writes (the gateway's own
 * figure leaves them out, since they are priced apart), and the cache buckets are given beside it.
 */
export function usageAttributes(usage: Usage): Record<string, number> {
  const attrs: Record<string, number> = {
    [GENAI.inputTokens]: usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
    [GENAI.outputTokens]: usage.output_tokens,
  };
  if (usage.cache_read_tokens > 0) attrs[GENAI.cacheReadTokens] = usage.cache_read_tokens;
  if (usage.cache_write_tokens > 0) attrs[GENAI.cacheWriteTokens] = usage.cache_write_tokens;
  if (usage.reasoning_tokens !== undefined) attrs[GENAI.reasoningTokens] = usage.reasoning_tokens;
  if (usage.video_seconds !== undefined) attrs[GATEWAY.videoSeconds] = usage.video_seconds;
  return attrs;
}

const NANO_PER_USD = 1e9;

/** The charge in nano-USD (exact) and in USD (the proposed cost attributes), once the call is settled. */
export function chargeAttributes(chargedNano: bigint): Record<string, number | string> {
  return {
    [GATEWAY.chargeNano]: Number(chargedNano),
    [GENAI.costAmount]: Number(chargedNano) / NANO_PER_USD,
    [GENAI.costCurrency]: 'USD',
    [GENAI.costSource]: 'local',
  };
}

/** The conventions' error.type of a failure: the gateway's error type (insufficient_credit, …), else its class. */
export function errorTypeOf(e: unknown): string {
  if (e instanceof GatewayError) return e.type;
  return e instanceof Error ? e.name : 'unknown';
}
