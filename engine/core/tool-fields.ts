// Where request bodies list tools, and which tools the vendor runs itself and bills as it goes, read off the wire
// formats' declarations (Protocol `tools`, in transforms/protocols/<format>/): this reader names no format's fields.
// Every use reads all formats' declarations together, as the hold must cover a tool wherever a client sends it.
import { isJsonObject, type JsonObject, type JsonValue } from './types.ts';

export type ServerToolKind = 'web_search' | 'file_search';

/**
 * Tools the vendor runs as often as it decides unless the body caps them, by what each use costs. Each entry is a
 * type pattern: the type itself, or a prefix ending in `*` for every version and variant (`web_search*`).
 *   web_search   a search billed per call, its result pages fed back as input
 *   file_search  a search billed per call, its chunks fed back as input
 *   advisor      another model's pass over the whole transcript, billed at that model's prices
 *   fetch        a page of any size read into the prompt
 *   remote_mcp   a remote MCP server's tool: each result as large as its server makes it, for another pass
 *   tool_search  definitions of the body's own deferred tools loaded into the prompt, for another pass
 */
interface VendorRunTools {
  web_search?: string[];
  file_search?: string[];
  advisor?: string[];
  fetch?: string[];
  remote_mcp?: string[];
  tool_search?: string[];
}

/**
 * Where a format's bodies carry tools.
 *   list          the top-level field listing the tools; each entry's `type` says what it is
 *   body_defined  types of the tools the body defines itself (a function); any other typed tool is the vendor's,
 *                 whose definition the vendor adds to the prompt
 *   runs          the tools its vendors run themselves (VendorRunTools)
 *   servers       top-level lists of remote MCP servers the vendor calls, as a remote_mcp tool does
 */
export interface ToolFields {
  list: string;
  body_defined?: string[];
  runs?: VendorRunTools;
  servers?: string[];
}

/** Some formats' declarations read together, made once for the walks made of every body. */
export interface ToolReading {
  /** Every declared tool list. */
  lists: readonly string[];
  /** The tools a body sends, every declared list's in turn (the one list itself when only one is declared). */
  toolsOf(body: JsonObject): readonly JsonValue[];
  /** Where the `index`-th of toolsOf(body) sits, for an error naming it: `tools[2]`. */
  pathOf(body: JsonObject, index: number): string;
  /** The priced kind of a tool's type, or undefined for a tool the vendor does not bill per call. */
  kindOf(type: JsonValue | undefined): ServerToolKind | undefined;
  /** Whether a type matches what any format declares under `runs[kind]`. */
  runs(kind: keyof VendorRunTools, type: JsonValue | undefined): boolean;
  /** Whether the body sends a tool of that kind. */
  sends(body: JsonObject, kind: keyof VendorRunTools): boolean;
  /** Whether the type is one the body defines itself. */
  isBodyDefined(type: string): boolean;
  /** Whether the body names a remote MCP server in a declared servers list. */
  callsServers(body: JsonObject): boolean;
}

const NO_TOOLS: readonly JsonValue[] = [];

/** A type pattern as a test: the type itself, or a prefix ending in `*`. */
const matcher = (patterns: readonly string[]) => {
  const exact = new Set(patterns.filter((p) => !p.endsWith('*')));
  const prefixes = patterns.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  return (type: JsonValue | undefined): boolean =>
    typeof type === 'string' && (exact.has(type) || prefixes.some((prefix) => type.startsWith(prefix)));
};

const KINDS = ['web_search', 'file_search', 'advisor', 'fetch', 'remote_mcp', 'tool_search'] as const;

/** The union of `declared`: a tool one format's vendors run is held for in every body that sends it. */
export function toolReading(declared: readonly ToolFields[]): ToolReading {
  const lists = [...new Set(declared.map((t) => t.list))];
  const bodyDefined = new Set(declared.flatMap((t) => t.body_defined ?? []));
  const servers = [...new Set(declared.flatMap((t) => t.servers ?? []))];
  const matchers = Object.fromEntries(KINDS.map((k) => [k, matcher(declared.flatMap((t) => t.runs?.[k] ?? []))])) as Record<
    keyof VendorRunTools,
    (type: JsonValue | undefined) => boolean
  >;
  const toolsOf = (body: JsonObject): readonly JsonValue[] => {
    if (lists.length === 1) {
      const only = body[lists[0]!];
      return Array.isArray(only) ? only : NO_TOOLS;
    }
    return lists.flatMap((list) => (Array.isArray(body[list]) ? (body[list] as JsonValue[]) : []));
  };
  return {
    lists,
    toolsOf,
    pathOf(body, index) {
      let left = index;
      for (const list of lists) {
        const items = body[list];
        const n = Array.isArray(items) ? items.length : 0;
        if (left < n) return `${list}[${left}]`;
        left -= n;
      }
      return `${lists[0] ?? 'tools'}[${index}]`;
    },
    kindOf: (type) => (matchers.web_search(type) ? 'web_search' : matchers.file_search(type) ? 'file_search' : undefined),
    runs: (kind, type) => matchers[kind](type),
    sends: (body, kind) => toolsOf(body).some((t) => isJsonObject(t) && matchers[kind](t.type)),
    isBodyDefined: (type) => bodyDefined.has(type),
    callsServers: (body) => servers.some((field) => Array.isArray(body[field]) && body[field].length > 0),
  };
}
