// Chat-completions usage (vendors B–E on the chat door; the embeddings door too) → the four buckets.
// prompt_tokens INCLUDES prompt_tokens_details.cached_tokens (and cache_write_tokens where reported), so
// uncached input = prompt_tokens − cached − written, never below 0 (so cached tokens are never billed twice).
import type { UsageReader } from '../../engine/core/call.ts';
import { emptyUsage, type JsonValue, type Usage } from '../../engine/core/types.ts';
import { isObject, num } from '../util/json.ts';

/** Splits a prompt count that includes cached and written tokens into the uncached and cache buckets. */
export function splitPrompt(usage: Usage, prompt: number, cached: number, written: number): Usage {
  usage.cache_read_tokens = Math.min(cached, prompt);
  usage.cache_write_tokens = Math.min(written, prompt - usage.cache_read_tokens);
  usage.input_tokens = Math.max(0, prompt - usage.cache_read_tokens - usage.cache_write_tokens);
  return usage;
}

export function normaliseChatUsage(u: JsonValue | undefined): Usage {
  const usage = emptyUsage();
  if (!isObject(u)) return usage;
  const details = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  splitPrompt(usage, num(u.prompt_tokens), num(details.cached_tokens), num(details.cache_write_tokens));
  usage.output_tokens = num(u.completion_tokens);
  if (isObject(u.completion_tokens_details) && typeof u.completion_tokens_details.reasoning_tokens === 'number') {
    usage.reasoning_tokens = num(u.completion_tokens_details.reasoning_tokens);
  }
  return usage;
}

export const chatUsage: UsageReader = (answer) => normaliseChatUsage(answer.usage);
