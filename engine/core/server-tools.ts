// Server tools: tools the vendor runs and bills per call, as often as it decides unless the body caps them. The
// reservation and the request chains both read this one list, or the vendor could run a tool the hold does not cover.
import type { JsonValue } from './types.ts';

export type ServerToolKind = 'web_search' | 'file_search';

/** The priced kind of a tool's `type`, or undefined for a tool the vendor does not bill per call. */
export function serverToolKind(type: JsonValue | undefined): ServerToolKind | undefined {
  if (typeof type !== 'string') return undefined;
  // Every version and variant of web search (web_search_20250305, web_search_preview, …) bills as a search.
  if (type.startsWith('web_search')) return 'web_search';
  if (type === 'file_search') return 'file_search';
  return undefined;
}

/**
 * An advisor tool: the vendor runs another model over the whole transcript at each use, billed at that model's
 * price. Capped and held like a server tool (its uses), with each use priced as that model's pass.
 */
export const isAdvisorTool = (type: JsonValue | undefined): boolean => typeof type === 'string' && type.startsWith('advisor');

/**
 * A page fetch tool: the vendor reads a page of any size into the prompt at each use, as often as it decides unless
 * capped. Capped like a server tool (its uses); each use may fill the context window.
 */
export const isFetchTool = (type: JsonValue | undefined): boolean => typeof type === 'string' && type.startsWith('web_fetch');

/**
 * A remote MCP server's tools (responses `mcp`, native `mcp_toolset`): the vendor calls the server and feeds each
 * result back into the prompt, as large as the server makes it, for another pass.
 */
export const isRemoteMcpTool = (type: JsonValue | undefined): boolean => typeof type === 'string' && type.startsWith('mcp');

/**
 * A tool search tool: each search loads definitions of the body's own deferred tools into the prompt, and the model
 * reads it all again, a pass like a server tool's.
 */
export const isToolSearchTool = (type: JsonValue | undefined): boolean => typeof type === 'string' && type.startsWith('tool_search');
