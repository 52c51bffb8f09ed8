// Responses door: events relayed verbatim (`event:` and `data:` lines) as they arrive. Usage is read from the
// final response object (response.completed, or response.incomplete / response.failed), with web_search_call
// and file_search_call items counted from its output; while the stream runs, finished output items
// (response.output_item.done) are counted too, so a cut stream still bills the searches it made.
import type { Call, SseEvent, StreamTranslatorFactory } from '../../engine/core/call.ts';
import type { JsonObject, JsonValue } from '../../engine/core/types.ts';
import { estimateTokens } from '../util/estimate.ts';
import { isObject, tryParse } from '../util/json.ts';
import { eventFrame } from '../util/sse.ts';
import { countToolCalls, normaliseResponsesUsage } from '../usage/responses-usage.ts';

const FINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

export const relayResponses: StreamTranslatorFactory = (call: Call) => {
  let final: JsonObject | undefined;
  const doneItems: JsonValue[] = [];
  let chars = 0;
  return {
    push(event: SseEvent): string[] {
      const data = tryParse(event.data);
      if (isObject(data)) {
        const type = typeof data.type === 'string' ? data.type : event.event;
        if (type && FINAL.has(type) && isObject(data.response)) final = data.response;
        else if (type === 'response.output_item.done' && isObject(data.item)) doneItems.push(data.item);
        else if (type === 'response.output_text.delta' && typeof data.delta === 'string') chars += data.delta.length;
        else if (type === 'response.function_call_arguments.delta' && typeof data.delta === 'string') chars += data.delta.length;
      }
      return [eventFrame(event.event, event.data)];
    },
    end: () => [],
    usage() {
      if (final && isObject(final.usage)) {
        const usage = normaliseResponsesUsage(final);
        if (!Array.isArray(final.output) || final.output.length === 0) {
          const calls = countToolCalls(doneItems);
          usage.web_search_calls = calls.web;
          usage.file_search_calls = calls.file;
        }
        return usage;
      }
      const usage = normaliseResponsesUsage({ output: doneItems });
      usage.output_tokens = estimateTokens(chars);
      usage.input_tokens = estimateTokens(JSON.stringify(call.body.input ?? null).length + JSON.stringify(call.body.instructions ?? '').length);
      return usage;
    },
  };
};
