// A model door's request as the rest of the call sees it: a JSON object, and the files of a form kept
// aside as bytes. A JSON door reads it here; a form is read by multipart.ts.
import type { FastifyRequest } from 'fastify';
import type { UploadedFile } from '../core/call.ts';
import { errors } from '../core/errors.ts';
import type { JsonObject } from '../core/types.ts';

export interface RequestBody {
  body: JsonObject;
  files?: Record<string, UploadedFile> | undefined;
}

/** The parsed JSON body, which must be an object; `orElse` names the other content type a door takes, for its refusal. */
export function readJsonBody(req: FastifyRequest, orElse?: string): RequestBody {
  const body = req.body;
  if (typeof body === 'string' || !/^application\/([\w.+-]+\+)?json\b/i.test(req.headers['content-type'] ?? '')) {
    // Fastify reads text/plain as a string, and a body sent without a content type reaches here empty.
    const sent = req.headers['content-type'] ? `this one was ${req.headers['content-type']}` : 'this one had no content-type';
    const types = orElse ? `application/json (or ${orElse})` : 'application/json';
    throw errors.invalidRequest(`The request body must be a JSON object, sent with content-type: ${types} (${sent}).`);
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw errors.invalidRequest('The request body must be a JSON object.');
  return { body: body as JsonObject };
}
