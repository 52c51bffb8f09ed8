// The usage figures vendors report, read into the four buckets: the chat family's (`prompt_tokens`,
// `completion_tokens`: chat completions, embeddings) and the token family's (`input_tokens`, `output_tokens`:
// responses, images). Shared by the formats whose usage readers read one of them.
// prompt_tokens INCLUDES prompt_tokens_details.cached_tokens (and cache_write_tokens where reported), so
// uncached input = prompt_tokens − cached − written, never below 0 (so cached tokens are never billed twice).
// Generated tokens are completion_tokens, or what total_tokens holds beyond the prompt when that is more (reasoning
// counted apart). prompt_tokens and completion_tokens are in every chat figure; the embeddings door's figure has prompt_tokens
// alone, and nothing is generated. A count that cannot be read stays NaN (through the split too) for the caller
// to estimate.
import { emptyUsage, type JsonValue, type Usage } from '../../engine/core/types.ts';
import { unreportedUsage } from './estimate.ts';
import { count, isObject, requiredCount } from './json.ts';

/** Splits a prompt count that includes cached and written tokens into the uncached and cache buckets. */
function splitPrompt(usage: Usage, prompt: number, cached: number, written: number): Usage {
  usage.cache_read_tokens = Math.min(cached, prompt);
  usage.cache_write_tokens = Math.min(written, prompt - usage.cache_read_tokens);
  usage.input_tokens = Math.max(0, prompt - usage.cache_read_tokens - usage.cache_write_tokens);
  return usage;
}

/** The chat family's figure; `generates` false for one without a completion count (embeddings). */
export function normaliseChatUsage(u: JsonValue | undefined, generates = true): Usage {
  if (!isObject(u)) return unreportedUsage();
  const usage = emptyUsage();
  const details = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  splitPrompt(usage, requiredCount(u.prompt_tokens), count(details.cached_tokens), count(details.cache_write_tokens));
  usage.output_tokens = generates ? requiredCount(u.completion_tokens) : count(u.completion_tokens);
  // Vendors that count reasoning apart from completion_tokens (vendor D) put it in total_tokens only: what the
  // total holds beyond the prompt was generated all the same. Where completion_tokens includes the reasoning,
  // the total is prompt + completion and nothing changes.
  const beyondPrompt = count(u.total_tokens) - requiredCount(u.prompt_tokens);
  if (generates && beyondPrompt > usage.output_tokens) usage.output_tokens = beyondPrompt;
  if (isObject(u.completion_tokens_details) && typeof u.completion_tokens_details.reasoning_tokens === 'number') {
    usage.reasoning_tokens = count(u.completion_tokens_details.reasoning_tokens);
  }
  return usage;
}

/** The token family's figure (`input_tokens` including its cached and written details, `output_tokens`). */
export function normaliseTokenUsage(u: JsonValue | undefined): Usage {
  if (!isObject(u)) return unreportedUsage();
  const usage = emptyUsage();
  const details = isObject(u.input_tokens_details) ? u.input_tokens_details : {};
  splitPrompt(usage, requiredCount(u.input_tokens), count(details.cached_tokens), count(details.cache_write_tokens));
  usage.output_tokens = requiredCount(u.output_tokens);
  if (isObject(u.output_tokens_details) && typeof u.output_tokens_details.reasoning_tokens === 'number') {
    usage.reasoning_tokens = count(u.output_tokens_details.reasoning_tokens);
  }
  return usage;
}
