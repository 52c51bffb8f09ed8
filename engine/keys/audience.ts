// Audience rules: `student` keys cannot use web search, web page reading, remote MCP or video creation.
// A pure function over the door and the client's body, run after authentication and before any charge.
// Refusals are 403 `permission_error` with a message naming what was refused and why.
import { errors, type GatewayError } from '../core/errors.ts';
import type { Audience } from './types.ts';

type Reason = 'web search' | 'web page reading' | 'remote MCP';

/** Tool `type` values (or their dated variants) that each reason covers, in every vendor format. */
function reasonOfToolType(type: string): Reason | null {
  const t = type.toLowerCase();
  if (t.startsWith('web_search') || t === 'google_search' || t === 'google_search_retrieval') return 'web search';
  if (t.startsWith('web_fetch') || t === 'url_context') return 'web page reading';
  if (t.startsWith('mcp')) return 'remote MCP'; // mcp (responses), mcp_toolset (messages)
  return null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A door is a video door when its name or path says so (`videos`, `/v1/videos`, `videos.create`). */
function isVideoDoor(door: string): boolean {
  return /video/i.test(door);
}

function refusal(what: string, detail: string): GatewayError {
  return errors.forbidden(
    `Student keys cannot use ${what} (${detail}). Remove it from the request, or use a key whose audience is teacher.`,
  );
}

/**
 * Why a key of `audience` may not make this request on `door`, or null when it may.
 * `door` is the door name from config/doors.yaml or its path; `body` is the client's body as sent.
 */
export function audienceRefusal(audience: Audience | null | undefined, door: string, body: unknown): GatewayError | null {
  if (audience !== 'student') return null;
  if (isVideoDoor(door)) {
    return errors.forbidden('Student keys cannot create videos. Use a key whose audience is teacher.');
  }
  if (!isObject(body)) return null;
  const tools = body.tools;
  if (Array.isArray(tools)) {
    for (let i = 0; i < tools.length; i++) {
      const tool = tools[i];
      if (!isObject(tool) || typeof tool.type !== 'string') continue;
      const reason = reasonOfToolType(tool.type);
      if (reason) return refusal(reason, `tools[${i}].type '${tool.type}'`);
    }
  }
  // Chat-completions search option and the native remote MCP connector.
  if (body.web_search_options !== undefined && body.web_search_options !== null) {
    return refusal('web search', 'web_search_options');
  }
  if (Array.isArray(body.mcp_servers) && body.mcp_servers.length > 0) {
    return refusal('remote MCP', 'mcp_servers');
  }
  return null;
}
