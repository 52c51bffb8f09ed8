// Vendor A usage → the four buckets. Vendor A's input_tokens already EXCLUDES cache tokens:
//   input_tokens → input; cache_read_input_tokens → cache read; cache_creation_input_tokens (or, when absent,
//   the sum of cache_creation's per-TTL counts) → cache write; output_tokens → output;
//   server_tool_use.web_search_requests → web searches.
// usage.iterations (server-side loops):
//   compaction entries are NOT in the top-level figures (vendor docs) and are billed at the same model's
//   price: added to the buckets;
//   advisor_message entries are another model's tokens, billed at that model's price: listed in `advisor`
//   (its cache reads and writes are counted as input, since Usage.advisor has no cache buckets — the
//   conservative choice); message entries are already summed in the top level and ignored.
import type { UsageReader } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { emptyUsage, type JsonObject, type JsonValue, type Usage } from '../../../engine/core/types.ts';
import { unreportedUsage } from '../../util/estimate.ts';
import { count, isObject, requiredCount } from '../../util/json.ts';

function cacheWrite(u: JsonObject): number {
  if (u.cache_creation_input_tokens !== undefined && u.cache_creation_input_tokens !== null) return count(u.cache_creation_input_tokens);
  if (isObject(u.cache_creation)) return Object.values(u.cache_creation).reduce<number>((s, v) => s + count(v), 0);
  return 0;
}

/** Normalise one vendor A usage object (from a message, message_start or a merged message_delta). */
export function normaliseMessagesUsage(u: JsonValue | undefined): Usage {
  if (!isObject(u)) return unreportedUsage();
  const usage = emptyUsage();
  usage.input_tokens = requiredCount(u.input_tokens);
  usage.output_tokens = requiredCount(u.output_tokens);
  usage.cache_read_tokens = count(u.cache_read_input_tokens);
  usage.cache_write_tokens = cacheWrite(u);
  // Writes kept an hour are billed at their own price; the per-TTL breakdown says how many there were.
  const hour = isObject(u.cache_creation) ? count(u.cache_creation.ephemeral_1h_input_tokens) : 0;
  if (hour > 0) usage.cache_write_1h_tokens = Math.min(hour, usage.cache_write_tokens);
  if (isObject(u.server_tool_use)) usage.web_search_calls = count(u.server_tool_use.web_search_requests);
  if (Array.isArray(u.iterations)) {
    for (const it of u.iterations) {
      if (!isObject(it)) continue;
      if (it.type === 'compaction') {
        usage.input_tokens += count(it.input_tokens);
        usage.output_tokens += count(it.output_tokens);
        usage.cache_read_tokens += count(it.cache_read_input_tokens);
        usage.cache_write_tokens += cacheWrite(it);
      } else if (it.type === 'advisor_message' && typeof it.model === 'string') {
        (usage.advisor ??= []).push({
          model: it.model,
          input_tokens: count(it.input_tokens) + count(it.cache_read_input_tokens) + cacheWrite(it),
          output_tokens: count(it.output_tokens),
        });
      }
    }
  }
  return usage;
}

const run: UsageReader = (answer) =>
  normaliseMessagesUsage(isObject(answer.usage) ? answer.usage : 'input_tokens' in answer ? answer : undefined);

/** The step as chains name it. */
export const messagesUsage: Step<UsageReader> = { name: 'messages-usage', run };
