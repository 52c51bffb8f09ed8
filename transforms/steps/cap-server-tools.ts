// Server tools (web search, file search), advisors and page fetches run as often as the vendor decides unless the body caps them, and the
// hold covers settings.serverToolCap.calls per uncapped tool. So the cap the hold assumes is written into the
// body, in the field the wire format enforces: on each server tool (`perTool`, max_uses on /v1/messages) or
// once for the call (`perCall`, max_tool_calls on /v1/responses). A cap the client sent is kept (and held as
// sent); one that is not a positive whole number is left for the reservation to refuse by name. A file search
// tool's results per call (`results`, max_num_results on /v1/responses) are capped the same way.
import type { RequestTransform } from '../../engine/core/call.ts';
import type { Step } from '../../engine/core/protocol.ts';
import type { JsonValue } from '../../engine/core/types.ts';
import { isObject } from '../util/json.ts';

const unset = (v: JsonValue | undefined) => v === undefined || v === null;

const run: RequestTransform = (call) => {
  const { calls, perTool, perCall, results } = call.settings.serverToolCap;
  const { tools: reading } = call.settings;
  const body = call.body;
  const tools = reading.toolsOf(body);
  if (tools.length === 0) return call;
  const serverTools = tools.filter((t) => isObject(t) && reading.kindOf(t.type) !== undefined);
  // Advisors and page fetches loop as server tools do, each use a pass over the whole prompt.
  const advisors = tools.filter((t) => isObject(t) && (reading.runs('advisor', t.type) || reading.runs('fetch', t.type)));
  // A remote MCP server's calls loop too; the format's cap for the whole call is the only one that reaches them.
  const mcp = tools.some((t) => isObject(t) && reading.runs('remote_mcp', t.type));
  if (serverTools.length === 0 && advisors.length === 0 && !mcp) return call;
  if (perTool) {
    for (const tool of [...serverTools, ...advisors]) if (isObject(tool) && unset(tool[perTool])) tool[perTool] = calls;
  }
  if (perCall && mcp && unset(body[perCall])) body[perCall] = calls;
  if (serverTools.length === 0) return call;
  // Each file search feeds back up to this many chunks as input: the hold covers the count written.
  if (results) {
    for (const tool of serverTools) {
      if (isObject(tool) && reading.kindOf(tool.type) === 'file_search' && unset(tool[results.field])) tool[results.field] = results.count;
    }
  }
  if (perCall && unset(body[perCall])) body[perCall] = calls;
  return call;
};

/** The step as chains name it. */
export const capServerTools: Step<RequestTransform> = { name: 'cap-server-tools', run };
