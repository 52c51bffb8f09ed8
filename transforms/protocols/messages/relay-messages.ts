// Messages door (vendor A passthrough): events relayed verbatim (`event:` and `data:` lines) as they
// arrive. Usage is read from message_start and the cumulative message_delta (cache reads and writes,
// server_tool_use.web_search_requests, iterations), or estimated when the vendor broke the stream first.
import type { Call, SseEvent, StreamTranslatorFactory } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { isObject, tryParse } from '../../util/json.ts';
import { eventFrame } from '../../util/sse.ts';
import { NativeUsageTracker } from './native-usage-tracker.ts';

const run: StreamTranslatorFactory = (call: Call) => {
  const tracker = new NativeUsageTracker(call);
  let stopped = false;
  return {
    push(event: SseEvent): string[] {
      const data = tryParse(event.data);
      if (isObject(data)) tracker.see(typeof data.type === 'string' || !event.event ? data : { ...data, type: event.event });
      if (event.event === 'message_stop' || (isObject(data) && data.type === 'message_stop')) stopped = true;
      return [eventFrame(event.event, event.data)];
    },
    end: () => [],
    answerEnded: () => stopped,
    usage: () => tracker.usage(),
  };
};

/** The step as chains name it. */
export const relayMessages: Step<StreamTranslatorFactory> = { name: 'relay-messages', run };
