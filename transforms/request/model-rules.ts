// The model's named rules (config/rules.yaml, resolved into call.rules) applied to the body, on any door:
//   - drops: parameters removed before the vendor sees them (a dotted name reaches into an object);
//   - lowersForcedToolChoice: a forced tool choice becomes `auto`. Works on both body shapes:
//       chat-completions: 'required', {type:'function'|'custom', …} → 'auto'; allowed_tools mode 'required' → 'auto';
//       native messages:  {type:'any'} and {type:'tool', name} → {type:'auto'}, keeping disable_parallel_tool_use.
import type { RequestTransform } from '../../engine/core/call.ts';
import type { JsonObject, JsonValue } from '../../engine/core/types.ts';
import { isObject } from '../util/json.ts';

function drop(body: JsonObject, path: string): void {
  const keys = path.split('.');
  let at: JsonValue = body;
  for (const k of keys.slice(0, -1)) {
    if (!isObject(at)) return;
    at = at[k];
  }
  if (isObject(at)) delete at[keys[keys.length - 1]];
}

function lowered(choice: JsonValue | undefined): JsonValue | undefined {
  if (choice === 'required') return 'auto';
  if (!isObject(choice)) return choice;
  switch (choice.type) {
    case 'function':
    case 'custom':
      return 'auto';
    case 'allowed_tools':
      return isObject(choice.allowed_tools) && choice.allowed_tools.mode === 'required'
        ? { ...choice, allowed_tools: { ...choice.allowed_tools, mode: 'auto' } }
        : choice;
    case 'any':
    case 'tool': {
      const out: JsonObject = { type: 'auto' };
      if (choice.disable_parallel_tool_use !== undefined) out.disable_parallel_tool_use = choice.disable_parallel_tool_use;
      return out;
    }
    default:
      return choice;
  }
}

export const modelRules: RequestTransform = (call) => {
  for (const name of call.rules.drops) drop(call.body, name);
  if (call.rules.lowersForcedToolChoice && call.body.tool_choice !== undefined) {
    call.body.tool_choice = lowered(call.body.tool_choice) as JsonValue;
  }
  return call;
};
