// Chat door → vendor A: tool_choice and parallel_tool_calls.
//   none → {type:'none'}; auto → {type:'auto'}; required → {type:'any'};
//   {type:'function', function:{name}} → {type:'tool', name}.
//   parallel_tool_calls: false → disable_parallel_tool_use: true on the choice (an `auto` choice is created
//   when the client sent none), never dropped (a client that asked for one tool call at a time would get several). true is the native default and needs nothing.
// Without tools, none/auto mean nothing and are removed; a forced choice without tools is a 400.
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { bad, describe, isObject } from '../../util/json.ts';
import type { NativeToolChoice } from './request-bodies.ts';

function translate(choice: unknown): NativeToolChoice {
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (isObject(choice) && choice.type === 'function') {
    const name = isObject(choice.function) ? choice.function.name : undefined;
    if (typeof name !== 'string' || name === '') throw bad('tool_choice.function.name must be a non-empty string.', 'tool_choice');
    return { type: 'tool', name };
  }
  throw bad(
    `tool_choice ${describe(choice)} is not translated for vendor A models; send none, auto, required or {type:'function', function:{name}}.`,
    'tool_choice',
  );
}

const run: RequestTransform = (call) => {
  const body = call.body;
  const parallel = body.parallel_tool_calls;
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean')
    throw bad('parallel_tool_calls must be a boolean.', 'parallel_tool_calls');
  const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
  const raw = body.tool_choice;
  delete body.parallel_tool_calls;
  delete body.tool_choice;
  if (!hasTools) {
    if (raw === undefined || raw === null || raw === 'none' || raw === 'auto') return call;
    throw bad('tool_choice forces a tool call but no tools were sent.', 'tool_choice');
  }
  let choice: NativeToolChoice | undefined = raw === undefined || raw === null ? undefined : translate(raw);
  if (parallel === false && choice?.type !== 'none') {
    choice = { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  }
  if (choice) body.tool_choice = choice;
  return call;
};

/** The step as chains name it. */
export const toolChoiceToNative: Step<RequestTransform> = { name: 'tool-choice-to-native', run };
