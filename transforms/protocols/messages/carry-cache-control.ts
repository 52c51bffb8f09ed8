// Chat door → vendor A: prompt-caching breakpoints. The translation steps copy a part's cache_control onto
// the block it becomes; this step makes every breakpoint the native shape and checks it:
//   carried:  system text blocks, user/assistant content blocks, tool_result blocks and their inner blocks,
//             tool definitions, and the top level (automatic caching);
//   shape:    {type:'ephemeral'} plus ttl only when it is a native value ('5m' or '1h'); other keys removed;
//             an unknown type or ttl is a 400 (never silently dropped, never sent to a vendor that rejects it);
//   not carried: cache_control set directly on a message object — removed from the turn, as the
//                door's contract says (the native format has no message-level breakpoint).
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonObject } from '../../../engine/core/types.ts';
import { nativeCacheControl } from '../../util/cache-control.ts';
import { isObject } from '../../util/json.ts';

function normaliseOn(block: JsonObject, where: string): void {
  if (!('cache_control' in block)) return;
  const cc = nativeCacheControl(block.cache_control, where);
  if (cc) block.cache_control = cc;
  else delete block.cache_control;
}

function normaliseBlocks(blocks: unknown, where: string): void {
  if (!Array.isArray(blocks)) return;
  blocks.forEach((b, i) => {
    if (!isObject(b)) return;
    normaliseOn(b, `${where}[${i}]`);
    if (b.type === 'tool_result') normaliseBlocks(b.content, `${where}[${i}].content`);
  });
}

const run: RequestTransform = (call) => {
  const body = call.body;
  normaliseOn(body, 'the top level');
  normaliseBlocks(body.system, 'system');
  if (Array.isArray(body.messages)) {
    body.messages.forEach((m, i) => {
      if (!isObject(m)) return;
      delete m.cache_control;
      normaliseBlocks(m.content, `messages[${i}].content`);
    });
  }
  normaliseBlocks(body.tools, 'tools');
  return call;
};

/** The step as chains name it. */
export const carryCacheControl: Step<RequestTransform> = { name: 'carry-cache-control', run };
