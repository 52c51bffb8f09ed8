// Chat door → vendor A: function tools become native tools {name, description, input_schema}.
// `strict` is carried (the native tool has it); cache_control on the tool (or inside `function`) is carried.
// Other tool types (custom, web search options …) have no translation here: 400 pointing to /v1/messages.
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { bad, describe, isObject } from '../../util/json.ts';
import type { NativeTool } from './request-bodies.ts';

const run: RequestTransform = (call) => {
  const tools = call.body.tools;
  if (tools === undefined) return call;
  if (tools === null) {
    delete call.body.tools;
    return call;
  }
  if (!Array.isArray(tools)) throw bad(`tools must be an array of function definitions; got ${describe(tools)}.`, 'tools');
  if (tools.length === 0) {
    delete call.body.tools;
    return call;
  }
  call.body.tools = tools.map((t, i) => {
    const at = `tools[${i}]`;
    if (!isObject(t)) throw bad(`${at} must be an object {type:'function', function:{…}}.`, 'tools');
    if (t.type !== 'function') {
      throw bad(
        `${at} has type ${describe(t.type)}; only function tools are translated for vendor A models. Use /v1/messages for native tools.`,
        'tools',
      );
    }
    const fn = t.function;
    if (!isObject(fn) || typeof fn.name !== 'string' || fn.name === '')
      throw bad(`${at}.function.name must be a non-empty string.`, 'tools');
    const schema = fn.parameters ?? { type: 'object', properties: {} };
    if (!isObject(schema)) throw bad(`${at}.function.parameters must be a JSON Schema object.`, 'tools');
    const native: NativeTool = { name: fn.name, input_schema: schema };
    if (typeof fn.description === 'string' && fn.description !== '') native.description = fn.description;
    if (typeof fn.strict === 'boolean') native.strict = fn.strict;
    const cc = t.cache_control ?? fn.cache_control;
    if (cc !== undefined && cc !== null) native.cache_control = cc;
    return native;
  });
  return call;
};

/** The step as chains name it. */
export const toolsToNative: Step<RequestTransform> = { name: 'tools-to-native', run };
