// Where a body lists tools, which of them the client defines and which the vendor runs and bills as it goes, is
// each wire format's own declaration (Protocol `tools`, transforms/protocols/<format>/): a format of a test's own,
// whose list and tool types no shipped format names, is held for, checked and capped once it takes its place
// beside the others, and not before.
import { describe, expect, it } from 'vitest';
import { checkFieldSpelling } from '../../engine/calls/field-spelling.ts';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { textBounds } from '../../engine/catalog/text-bounds.ts';
import { everyFormatsTools } from '../../engine/catalog/wire-format.ts';
import type { ToolFields } from '../../engine/core/tool-fields.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import { protocols } from '../../transforms/protocols/index.ts';
import { withAndWithout as withToy } from '../helpers/toy-format.ts';
import { makeCall, run } from '../transforms/helpers.ts';

const snap = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);
const model = snap.catalog.models.get('b-6')!;
const billing = snap.config.billing;
const r = billing.reservation;

const TOY: ToolFields = {
  list: 'tool_specs',
  body_defined: ['fn'],
  runs: { web_search: ['grounding*'], fetch: ['url_context'] },
  servers: ['remote_servers'],
};

/** `read()` with the toy format beside the shipped ones, and without it. */
const withAndWithout = <T>(read: () => T) => withToy('toy-tools', { ...protocols.moderations!, tools: TOY }, read);

const bounds = (body: JsonObject) => textBounds(model, { model: 'b-6', messages: [], ...body }, billing, protocols.messages!.limits);
const status = (run: () => unknown): number | string => {
  try {
    run();
    return 'ok';
  } catch (e) {
    return `${(e as { status: number }).status} ${(e as Error).message}`;
  }
};

describe("a format's declaration decides where a body lists tools and which the vendor runs", () => {
  it('holds a search for every version of a tool it says its vendors search with', () => {
    const searches = withAndWithout(() => bounds({ tool_specs: [{ type: 'grounding_2026' }] }).serverToolCalls.web_search);
    expect(searches).toEqual({ with: r.max_server_tool_calls, without: 0 });
    // A type it does not name is not a search, whatever its list.
    expect(withAndWithout(() => bounds({ tool_specs: [{ type: 'ground' }] }).serverToolCalls.web_search).with).toBe(0);
  });

  it("adds the vendor's tool definition for a typed tool the body does not define", () => {
    const input = withAndWithout(
      () => bounds({ tool_specs: [{ type: 'gx' }] }).inputTokens - bounds({ tool_specs: [{ type: 'fn' }] }).inputTokens,
    );
    expect(input).toEqual({ with: r.vendor_tool_tokens, without: 0 });
  });

  it("holds a loop's passes for a remote server list and a page fetch", () => {
    const servers = withAndWithout(() => bounds({ remote_servers: [{ url: 'https://mcp.example' }] }).passes.inputTokens);
    expect(servers.without).toBe(0);
    expect(servers.with).toBeGreaterThan(0);
    const fetches = withAndWithout(() => bounds({ tool_specs: [{ type: 'url_context' }] }).passes.inputTokens);
    expect(fetches.without).toBe(0);
    expect(fetches.with).toBeGreaterThan(0);
  });

  it("checks every format's tool limit fields on its tools, naming the tool's place in its list", () => {
    const refused = withAndWithout(() => status(() => bounds({ tool_specs: [{ type: 'fn' }, { type: 'grounding', max_uses: 0 }] })));
    expect(refused.without).toBe('ok');
    expect(refused.with).toMatch(/^400 tool_specs\[1\]\.max_uses must be a positive whole number/);
  });

  it("refuses a field of its tools' entries that is not lowercase", () => {
    const body = { model: 'b-6', tool_specs: [{ type: 'grounding', MAX_USES: 1 }] };
    const refused = withAndWithout(() => status(() => checkFieldSpelling(body, { ...protocols })));
    expect(refused.without).toBe('ok');
    expect(refused.with).toMatch(/^400 .*'tool_specs\[0\]\.max_uses'/);
  });

  it('has the cap the hold assumes written on its tools by cap-server-tools', () => {
    const capped = withAndWithout(() => {
      const call = makeCall({ model: 'b-6', tool_specs: [{ type: 'grounding' }, { type: 'fn' }] });
      const settings = { ...call.settings, tools: everyFormatsTools(), serverToolCap: { calls: 7, perTool: 'max_uses' } };
      return run(['cap-server-tools'], { ...call, settings }).body.tool_specs;
    });
    expect(capped.with).toEqual([{ type: 'grounding', max_uses: 7 }, { type: 'fn' }]);
    expect(capped.without).toEqual([{ type: 'grounding' }, { type: 'fn' }]);
  });
});
