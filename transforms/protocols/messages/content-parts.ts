// Chat content parts → native content blocks (text, image, document). Shared by messages-to-blocks for
// user, assistant and tool messages. A part of an unknown type is a 400, never passed on or dropped.
import type { JsonObject, JsonValue } from '../../../engine/core/types.ts';
import { withCacheControl } from '../../util/cache-control.ts';
import { bad, describe, isObject } from '../../util/json.ts';
import type { ContentBlock, DocumentBlock, ImageBlock } from './request-bodies.ts';

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const DATA_URI = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/s;

function parseDataUri(uri: string): { mediaType: string; base64: boolean; data: string } | undefined {
  const m = DATA_URI.exec(uri);
  if (!m) return undefined;
  // None of the three groups is optional: each matched, if only the empty string.
  const [, mediaType = '', paramText = '', data = ''] = m;
  const params = paramText.split(';').filter(Boolean);
  return { mediaType: mediaType.toLowerCase(), base64: params.includes('base64'), data };
}

function imageBlock(part: JsonObject, where: string): ImageBlock {
  const image = part.image_url;
  const url = typeof image === 'string' ? image : isObject(image) ? image.url : undefined;
  if (typeof url !== 'string' || url === '') throw bad(`${where}.image_url.url must be a data: URI or an http(s) URL.`, 'messages');
  if (url.startsWith('data:')) {
    const parsed = parseDataUri(url);
    if (!parsed?.base64)
      throw bad(`${where}.image_url is a data: URI that is not base64 (expected data:image/png;base64,...).`, 'messages');
    const mediaType = parsed.mediaType === 'image/jpg' ? 'image/jpeg' : parsed.mediaType;
    if (!IMAGE_TYPES.has(mediaType)) {
      throw bad(
        `${where}.image_url has media type '${parsed.mediaType}'; vendor A accepts image/jpeg, image/png, image/gif and image/webp.`,
        'messages',
      );
    }
    return withCacheControl({ type: 'image', source: { type: 'base64', media_type: mediaType, data: parsed.data } }, part);
  }
  if (/^https?:\/\//i.test(url)) return withCacheControl({ type: 'image', source: { type: 'url', url } }, part);
  throw bad(`${where}.image_url.url must be a data: URI or an http(s) URL.`, 'messages');
}

function documentBlock(part: JsonObject, where: string): DocumentBlock {
  const file = part.file;
  if (!isObject(file)) throw bad(`${where}.file must be an object with file_data.`, 'messages');
  if (typeof file.file_data !== 'string') {
    throw bad(
      `${where}: files are carried to vendor A models only as inline file_data (a data: URI); file_id is not. Use /v1/messages for the native document block.`,
      'messages',
    );
  }
  const parsed = parseDataUri(file.file_data);
  if (parsed?.base64 && parsed.mediaType === 'application/pdf') {
    return withCacheControl({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: parsed.data } }, part);
  }
  if (parsed?.base64 && parsed.mediaType === 'text/plain') {
    const text = Buffer.from(parsed.data, 'base64').toString('utf8');
    return withCacheControl({ type: 'document', source: { type: 'text', media_type: 'text/plain', data: text } }, part);
  }
  throw bad(`${where}.file.file_data must be a data:application/pdf;base64 or data:text/plain;base64 URI for vendor A models.`, 'messages');
}

type PartRole = 'user' | 'assistant' | 'tool';

const ALLOWED: Record<PartRole, Set<string>> = {
  user: new Set(['text', 'image_url', 'file']),
  assistant: new Set(['text', 'refusal']),
  tool: new Set(['text', 'image_url']),
};

/** Content (string, null or array of parts) → native blocks. Empty text is left out (the vendor refuses empty text blocks). */
export function contentToBlocks(content: JsonValue | undefined, role: PartRole, where: string): ContentBlock[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content))
    throw bad(`${where}.content must be a string or an array of content parts; got ${describe(content)}.`, 'messages');
  const blocks: ContentBlock[] = [];
  content.forEach((part, j) => {
    const at = `${where}.content[${j}]`;
    if (!isObject(part) || typeof part.type !== 'string') throw bad(`${at} must be a content part object with a type.`, 'messages');
    if (part.prompt_cache_breakpoint !== undefined && part.prompt_cache_breakpoint !== null) {
      throw bad(
        `${at}.prompt_cache_breakpoint is not translated for vendor A models; mark the part with cache_control {"type":"ephemeral"} instead.`,
        'messages',
      );
    }
    if (!ALLOWED[role].has(part.type)) {
      throw bad(
        `${at} has type '${part.type}', which is not accepted in a ${role} message for vendor A models on /v1/chat/completions. Use /v1/messages for native content blocks.`,
        'messages',
      );
    }
    switch (part.type) {
      case 'text':
        if (typeof part.text !== 'string') throw bad(`${at}.text must be a string.`, 'messages');
        if (part.text !== '') blocks.push(withCacheControl({ type: 'text', text: part.text }, part));
        break;
      case 'refusal':
        if (typeof part.refusal !== 'string') throw bad(`${at}.refusal must be a string.`, 'messages');
        if (part.refusal !== '') blocks.push({ type: 'text', text: part.refusal });
        break;
      case 'image_url':
        blocks.push(imageBlock(part, at));
        break;
      case 'file':
        blocks.push(documentBlock(part, at));
        break;
    }
  });
  return blocks;
}
