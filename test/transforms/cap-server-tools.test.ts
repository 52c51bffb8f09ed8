// cap-server-tools: a server tool the body does not cap gets the cap the hold assumes, in the wire format's field.
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../engine/core/types.ts';
import { makeCall, run } from './helpers.ts';

const MESSAGES = { calls: 10, perTool: 'max_uses' };
const RESPONSES = { calls: 10, perCall: 'max_tool_calls' };

const capped = (body: JsonObject, serverToolCap: { calls: number; perTool?: string; perCall?: string }) => {
  const call = makeCall(body);
  return run(['cap-server-tools'], { ...call, settings: { ...call.settings, serverToolCap } }).body;
};

describe('cap-server-tools', () => {
  const web = { type: 'web_search_20250305', name: 'web_search' };
  const fn = { name: 'lookup', input_schema: { type: 'object' } };

  it('per tool: each uncapped server tool gets max_uses; capped ones and client tools are left alone', () => {
    const body = capped({ tools: [fn, web, { ...web, name: 'w2', max_uses: 3 }, { ...web, name: 'w3', max_uses: null }] }, MESSAGES);
    expect(body.tools).toEqual([fn, { ...web, max_uses: 10 }, { ...web, name: 'w2', max_uses: 3 }, { ...web, name: 'w3', max_uses: 10 }]);
    expect(body).not.toHaveProperty('max_tool_calls');
  });

  it('per call: max_tool_calls is written once when a server tool is given and none was sent', () => {
    const tools: JsonObject[] = [{ type: 'web_search' }, { type: 'file_search', vector_store_ids: ['vs'] }];
    expect(capped({ tools }, RESPONSES)).toEqual({ tools, max_tool_calls: 10 });
    expect(capped({ tools, max_tool_calls: 25 }, RESPONSES).max_tool_calls).toBe(25);
    expect(capped({ tools, max_tool_calls: null }, RESPONSES).max_tool_calls).toBe(10);
  });

  it("a remote MCP server's calls loop too: the call's cap is written for them (issue 39)", () => {
    const mcp: JsonObject = {
      tools: [
        { type: 'function', name: 'f' },
        { type: 'mcp', server_label: 's' },
      ],
    };
    expect(capped(mcp, RESPONSES)).toEqual({ ...mcp, max_tool_calls: 10 });
    expect(capped({ ...mcp, max_tool_calls: 2 }, RESPONSES).max_tool_calls).toBe(2);
  });

  it('a value that is not a cap is left for the reservation to refuse by name', () => {
    expect(capped({ tools: [{ type: 'web_search' }], max_tool_calls: 0 }, RESPONSES).max_tool_calls).toBe(0);
    expect(capped({ tools: [{ ...web, max_uses: -1 }] }, MESSAGES).tools).toEqual([{ ...web, max_uses: -1 }]);
  });

  it('nothing changes without a server tool, or on a wire format that takes no cap', () => {
    const functions: JsonObject = { tools: [{ type: 'function', name: 'f' }] };
    expect(capped(functions, RESPONSES)).toEqual(functions);
    expect(capped({ input: 'hi' }, RESPONSES)).toEqual({ input: 'hi' });
    expect(capped({ tools: [web] }, { calls: 10 })).toEqual({ tools: [web] });
  });
});
