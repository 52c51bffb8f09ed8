// Vendor A stop reasons → chat finish_reason. Every reason is listed; an unknown one becomes `stop`
// and never leaks into the client's answer: SDKs switch on finish_reason and break on a value they do not know.
//
// pause_turn: the vendor paused a long server-side tool loop. The chat door sends no server tools, so it is
// rare here; the turn did end without a truncation, so the client sees `stop` (it may send the conversation
// again to continue, as the vendor documents for the native format).
const MAP: Record<string, 'stop' | 'length' | 'tool_calls' | 'content_filter'> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
  pause_turn: 'stop',
  model_context_window_exceeded: 'length',
};

export function finishReasonFromStop(stopReason: unknown): 'stop' | 'length' | 'tool_calls' | 'content_filter' {
  return typeof stopReason === 'string' && Object.hasOwn(MAP, stopReason) ? MAP[stopReason]! : 'stop';
}
