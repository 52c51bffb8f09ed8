// Chat door, vendors B–E: every chunk's data is relayed verbatim the moment it arrives. The one exception:
// when the gateway asked for stream usage the client did not ask for (call.notes.streamUsageInjected, set by
// ask-stream-usage), the usage-only chunk (empty choices with usage) is hidden. Usage is read from whichever
// chunk carries it; when none did (the vendor broke the stream), or a count in it cannot be read, the output is
// estimated from the streamed text (by the vendor's tokenizer, or a bound per script) and the input from the whole request body (tools and system included).
import type { Call, SseEvent, StreamTranslatorFactory } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonValue } from '../../../engine/core/types.ts';
import { estimateInputTokens, estimateUnreadable, StreamedText } from '../../util/estimate.ts';
import { isObject, tryParse } from '../../util/json.ts';
import { eventFrame } from '../../util/sse.ts';
import { normaliseChatUsage } from '../../util/usage-figures.ts';

const run: StreamTranslatorFactory = (call: Call) => {
  let lastUsage: JsonValue | undefined;
  const streamed = new StreamedText();
  let done = false;
  return {
    push(event: SseEvent): string[] {
      if (event.data.trim() === '[DONE]') done = true;
      const data = done ? undefined : tryParse(event.data);
      if (isObject(data)) {
        if (isObject(data.usage)) lastUsage = data.usage;
        const choices = Array.isArray(data.choices) ? data.choices : [];
        for (const c of choices) {
          if (!isObject(c) || !isObject(c.delta)) continue;
          const d = c.delta;
          if (typeof d.content === 'string') streamed.add(d.content);
          if (typeof d.reasoning_content === 'string') streamed.add(d.reasoning_content);
          if (Array.isArray(d.tool_calls)) {
            for (const tc of d.tool_calls)
              if (isObject(tc) && isObject(tc.function) && typeof tc.function.arguments === 'string') streamed.add(tc.function.arguments);
          }
        }
        if (call.notes.streamUsageInjected && Array.isArray(data.choices) && data.choices.length === 0 && isObject(data.usage)) return [];
      }
      return [eventFrame(event.event, event.data)];
    },
    end: () => [],
    answerEnded: () => done,
    usage() {
      return estimateUnreadable(
        normaliseChatUsage(lastUsage),
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
export const relayHidingInjectedUsage: Step<StreamTranslatorFactory> = { name: 'relay-hiding-injected-usage', run };
