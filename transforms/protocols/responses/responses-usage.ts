// Responses-format usage (vendor B, responses door) → the four buckets plus billed tool calls.
// input_tokens INCLUDES input_tokens_details.cached_tokens (and cache_write_tokens where reported):
// uncached input = input − cached − written. Server tools are counted from the output items:
//   web_search_call: one per item whose action is a search (open_page / find_in_page actions are page
//   reads of an earlier search, not new searches); file_search_call: one per item.
import type { UsageReader } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonObject, JsonValue, Usage } from '../../../engine/core/types.ts';
import { isObject } from '../../util/json.ts';
import { normaliseTokenUsage } from '../../util/usage-figures.ts';

export function countToolCalls(items: JsonValue[] | undefined): { web: number; file: number } {
  let web = 0;
  let file = 0;
  for (const item of items ?? []) {
    if (!isObject(item)) continue;
    if (item.type === 'web_search_call') {
      const action = isObject(item.action) ? item.action.type : undefined;
      if (action === undefined || action === 'search') web += 1;
    } else if (item.type === 'file_search_call') file += 1;
  }
  return { web, file };
}

export function normaliseResponsesUsage(response: JsonObject): Usage {
  const usage = normaliseTokenUsage(response.usage);
  const calls = countToolCalls(Array.isArray(response.output) ? response.output : undefined);
  usage.web_search_calls = calls.web;
  usage.file_search_calls = calls.file;
  return usage;
}

const run: UsageReader = (answer) => normaliseResponsesUsage(isObject(answer.response) && !('output' in answer) ? answer.response : answer);

/** The step as chains name it. */
export const responsesUsage: Step<UsageReader> = { name: 'responses-usage', run };
