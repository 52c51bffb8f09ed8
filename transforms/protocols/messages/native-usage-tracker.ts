// Reads vendor A usage off a native event stream: message_start carries the input side, each message_delta
// carries cumulative figures that replace earlier ones. When the vendor broke the stream before reporting its
// final figures, the output is estimated from what was streamed, and the input from the whole
// request body when even message_start never arrived, so a broken stream is never settled at zero. A count the
// vendor sent that cannot be read is estimated the same way.
import type { Call } from '../../../engine/core/call.ts';
import type { JsonObject, Usage } from '../../../engine/core/types.ts';
import { estimateInputTokens, estimateUnreadable, StreamedText } from '../../util/estimate.ts';
import { isObject } from '../../util/json.ts';
import { normaliseMessagesUsage } from './messages-usage.ts';

export class NativeUsageTracker {
  private merged: JsonObject | undefined;
  private final = false;
  private readonly streamed = new StreamedText();

  constructor(private readonly call: Call) {}

  /** Feed every parsed event; returns the merged raw usage so far. */
  see(event: JsonObject): void {
    if (event.type === 'message_start' && isObject(event.message) && isObject(event.message.usage)) {
      this.merged = { ...event.message.usage };
    } else if (event.type === 'message_delta' && isObject(event.usage)) {
      this.merged ??= {};
      for (const [k, v] of Object.entries(event.usage)) if (v !== null && v !== undefined) this.merged[k] = v;
      this.final = true;
    } else if (event.type === 'content_block_delta' && isObject(event.delta)) {
      const d = event.delta;
      const piece = d.text ?? d.partial_json ?? d.thinking;
      if (typeof piece === 'string') this.streamed.add(piece);
    }
  }

  /** The raw native usage object as merged so far (for the chat usage chunk). */
  raw(): JsonObject | undefined {
    return this.merged;
  }

  usage(): Usage {
    const usage = normaliseMessagesUsage(this.merged);
    const vendor = this.call.model.vendor;
    // Until the final figures come, the output is the gateway's estimate, held to the call's hold as every estimate
    // is, and never below the count the vendor reported so far, which is its own; the final figures are the answer's.
    const soFar = usage.output_tokens;
    if (!this.final) usage.output_tokens = NaN;
    const out = estimateUnreadable(
      usage,
      () => ({
        input_tokens: estimateInputTokens(this.call.body, vendor, this.call.settings.images),
        output_tokens: this.streamed.tokens(vendor),
      }),
      this.call.notes.heldTokens,
    );
    if (!this.final && !Number.isNaN(soFar)) out.output_tokens = Math.max(out.output_tokens, soFar);
    return out;
  }
}
