// Responses door: events relayed verbatim (`event:` and `data:` lines) as they arrive. Usage is read from the
// final response object (response.completed, or response.incomplete / response.failed), with web_search_call
// and file_search_call items counted from its output; while the stream runs, finished output items
// (response.output_item.done) are counted too, so a stream the vendor broke still bills the searches it made.
// Only counts are kept while the stream runs, never the items or text themselves. A usage figure missing or
// unreadable is estimated from the streamed text and the request body.
import type { Call, SseEvent, StreamTranslatorFactory } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonObject } from '../../../engine/core/types.ts';
import { estimateInputTokens, estimateUnreadable, StreamedText } from '../../util/estimate.ts';
import { isObject, tryParse } from '../../util/json.ts';
import { eventFrame } from '../../util/sse.ts';
import { countToolCalls, normaliseResponsesUsage } from './responses-usage.ts';

const FINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

const run: StreamTranslatorFactory = (call: Call) => {
  let final: JsonObject | undefined;
  const doneCalls = { web: 0, file: 0 };
  const streamed = new StreamedText();
  let ended = false;
  return {
    push(event: SseEvent): string[] {
      const data = tryParse(event.data);
      if (isObject(data)) {
        const type = typeof data.type === 'string' ? data.type : event.event;
        if (type && FINAL.has(type)) ended = true;
        if (type && FINAL.has(type) && isObject(data.response)) final = data.response;
        else if (type === 'response.output_item.done' && isObject(data.item)) {
          const calls = countToolCalls([data.item]);
          doneCalls.web += calls.web;
          doneCalls.file += calls.file;
        } else if (type === 'response.output_text.delta' && typeof data.delta === 'string') streamed.add(data.delta);
        else if (type === 'response.function_call_arguments.delta' && typeof data.delta === 'string') streamed.add(data.delta);
      }
      return [eventFrame(event.event, event.data)];
    },
    end: () => [],
    answerEnded: () => ended,
    usage() {
      const reported = final && isObject(final.usage) ? final : {};
      const usage = normaliseResponsesUsage(reported);
      if (!Array.isArray(reported.output) || reported.output.length === 0) {
        usage.web_search_calls = doneCalls.web;
        usage.file_search_calls = doneCalls.file;
      }
      return estimateUnreadable(
        usage,
        () => ({
          input_tokens: estimateInputTokens(call.body, call.model.vendor, call.settings.images),
          output_tokens: streamed.tokens(call.model.vendor),
        }),
        call.notes.heldTokens,
      );
    },
  };
};

/** The step as chains name it. */
export const relayResponses: Step<StreamTranslatorFactory> = { name: 'relay-responses', run };
