// The model's named rules (config/rules.yaml, resolved into call.rules) applied to the body, on any door:
//   - drops: parameters removed before the vendor sees them (a dotted name reaches into an object);
//   - rewrites: the door's value changes (config/doors.yaml `rewrite`), a value sent as `from` goes as `to`;
//   - lowersForcedToolChoice: a forced tool choice becomes `auto`. Works on both body shapes:
//       chat-completions: 'required', {type:'function'|'custom', …} → 'auto'; allowed_tools mode 'required' → 'auto';
//       native messages:  {type:'any'} and {type:'tool', name} → {type:'auto'}, keeping disable_parallel_tool_use.
// What a rule changed is noted on the call (`notes.adjusted`), and the answer says it (`x-service-adjusted`): a
// client whose forced tool call came back as a plain answer must be able to see why.
import type { RequestTransform } from '../../engine/core/call.ts';
import type { Step } from '../../engine/core/protocol.ts';
import type { JsonObject, JsonValue } from '../../engine/core/types.ts';
import { isObject } from '../util/json.ts';

/** Removes the parameter at `path`; whether it was there. */
function drop(body: JsonObject, path: string): boolean {
  const keys = path.split('.');
  let at: JsonValue | undefined = body;
  for (const k of keys.slice(0, -1)) {
    if (!isObject(at)) return false;
    at = at[k];
  }
  const last = keys[keys.length - 1]!; // a split has at least one part
  if (!isObject(at) || !(last in at)) return false;
  delete at[last];
  return true;
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

const run: RequestTransform = (call) => {
  const adjusted: string[] = [];
  for (const name of call.rules.drops) if (drop(call.body, name)) adjusted.push(`${name} dropped`);
  for (const { param, from, to, or_omitted } of call.rules.rewrites) {
    if (call.body[param] === undefined && or_omitted) call.body[param] = to;
    if (call.body[param] !== from) continue;
    call.body[param] = to;
    adjusted.push(`${param}=${to}`);
  }
  if (call.rules.lowersForcedToolChoice && call.body.tool_choice !== undefined) {
    const choice = lowered(call.body.tool_choice) as JsonValue;
    if (JSON.stringify(choice) !== JSON.stringify(call.body.tool_choice)) adjusted.push('tool_choice=auto');
    call.body.tool_choice = choice;
  }
  if (adjusted.length > 0) call.notes.adjusted = [...(call.notes.adjusted ?? []), ...adjusted];
  return call;
};

/** The step as chains name it. */
export const modelRules: Step<RequestTransform> = { name: 'model-rules', run };
