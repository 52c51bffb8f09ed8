// GET /openapi.json, built at each request from the routes as registered, doors.yaml and the key doors' field
// table, so the description and the checks cannot drift apart.

import { AUDIT_ACTIONS } from '../audit/trail.ts';
import type { DoorConfig } from '../catalog/config.ts';
import { errorBodyOf } from '../catalog/wire-format.ts';
import { type ErrorBody, gatewayErrorBody } from '../core/errors.ts';
import type { RouteInfo } from '../http/route-list.ts';
import { GROUP_BODY_FIELDS } from '../keys/group-validate.ts';
import { KEY_BODY_FIELDS, LIST_LIMIT } from '../keys/validate.ts';

type Schema = Record<string, unknown>;

const SUMMARIES: Record<string, string> = {
  'GET /v1/models': 'Models the calling key may call.',
  'GET /v1/models/{id}': 'One model the calling key may call, as the list shows it.',
  'GET /v1/credits': "The calling key's wallet credit balance.",
  'GET /v1/key': 'Quota and expiry status of the calling key.',
  'GET /v1/generations/{id}': 'The usage record of one call, by the x-request-id it answered with (any key of the wallet).',
  'GET /v1/videos': "The wallet's API video jobs.",
  'GET /v1/videos/{id}': 'One video job; poll about every 5 seconds until completed or failed.',
  'GET /v1/videos/{id}/content': 'Redirects to a short-lived address of the mp4 file.',
  'GET /v1/videos/{id}/file': 'The mp4 file, by the signed address the content door redirects to.',
  'DELETE /v1/videos/{id}': 'Deletes the file at once; no refund.',
  'GET /v1/keys': 'Lists active API keys, newest first (management key).',
  'POST /v1/keys': 'Creates one or many API keys (management key).',
  'GET /v1/keys/{id}': 'One API key record (management key).',
  'PATCH /v1/keys/{id}': 'Changes only the fields sent; null clears (management key).',
  'DELETE /v1/keys/{id}': 'Closes the key at once, irreversibly (management key).',
  'GET /v1/key-groups': "Lists the wallet's key groups (classes) with their limits and their keys' use (management key).",
  'POST /v1/key-groups': "Creates a key group whose limits cap the sum of its keys' use (management key).",
  'GET /v1/key-groups/{id}': 'One key group (management key).',
  'PATCH /v1/key-groups/{id}': "Changes a group's name or limits; a raised limit lifts a 429 at once (management key).",
  'DELETE /v1/key-groups/{id}': 'Deletes a group without active keys; 409 while it has some (management key).',
  'GET /v1/audit': "The wallet's audit trail, newest first: who changed what, from where, before and after (management key).",
  'GET /healthz': 'The process is up.',
  'GET /readyz': 'The database answers and the catalog is loaded (503 otherwise).',
  'GET /metrics': 'Prometheus metrics (GATEWAY_METRICS_TOKEN, or loopback peers with GATEWAY_METRICS_OPEN=loopback).',
  'GET /openapi.json': 'This description.',
};

/** The filters of GET /v1/audit (engine/audit/query.ts checks them). */
const AUDIT_QUERY: Schema[] = [
  { name: 'action', in: 'query', schema: { enum: [...AUDIT_ACTIONS] } },
  { name: 'since', in: 'query', schema: { type: 'string', format: 'date-time' }, description: 'Entries at or after this instant.' },
  { name: 'until', in: 'query', schema: { type: 'string', format: 'date-time' }, description: 'Entries before this instant.' },
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 } },
  { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } },
];

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request (the field is named in param)',
  401: 'Missing, unknown, closed or expired key',
  402: 'Not enough credits for what the call may cost; nothing was charged',
  403: 'Not allowed for this key or plan',
  404: 'Not found',
  409: 'Conflict',
  413: 'Request too large',
  429: 'A key limit is reached',
  502: 'The vendor failed on every route',
  503: 'Temporary fault on the service side',
};

const errorResponse = (status: number, body: ErrorBody) => ({
  description: STATUS_TEXT[status] ?? 'Error',
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${body.name}` } } },
});

/** `/v1/videos/:id` → `/v1/videos/{id}`, with the path parameters it names. */
function openApiPath(url: string): { path: string; params: string[] } {
  const params: string[] = [];
  const path = url.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    params.push(name);
    return `{${name}}`;
  });
  return { path, params };
}

function securityFor(method: string, path: string, door: DoorConfig | undefined): Schema[] {
  if (door) return door.key_headers.map((h) => (h === 'x-api-key' ? { apiKeyHeader: [] } : { apiKey: [] }));
  if (path.startsWith('/v1/keys') || path.startsWith('/v1/key-groups') || path === '/v1/audit') return [{ managementKey: [] }];
  if (path.startsWith('/admin/')) return [{ adminToken: [] }];
  if (path === '/v1/videos/{id}/file' || !path.startsWith('/v1/')) return [];
  if (path === '/v1/generations/{id}' || (path === '/v1/key' && method === 'GET')) return [{ apiKey: [] }, { apiKeyHeader: [] }];
  return [{ apiKey: [] }];
}

function doorRequestBody(door: DoorConfig): Schema {
  const properties: Schema = Object.fromEntries(door.requires.map((f) => [f, {}]));
  const json = { schema: { type: 'object', required: door.requires, properties, additionalProperties: true } };
  const files: string[] = (door as { files?: string[] }).files ?? [];
  const form = {
    schema: {
      type: 'object',
      required: door.requires,
      properties: {
        ...properties,
        ...Object.fromEntries(files.map((f) => [f, { type: 'string', contentMediaType: 'application/octet-stream' }])),
      },
    },
  };
  const content: Schema = {};
  if (door.body !== 'multipart') content['application/json'] = json;
  if (door.body !== 'json') content['multipart/form-data'] = form;
  return { required: true, content };
}

function keyBody(createOnlyToo: boolean): Schema {
  const fields = Object.entries(KEY_BODY_FIELDS).filter(([, f]) => createOnlyToo || !f.createOnly);
  return {
    required: !createOnlyToo,
    content: {
      'application/json': {
        schema: { type: 'object', additionalProperties: false, properties: Object.fromEntries(fields.map(([n, f]) => [n, f.schema])) },
      },
    },
  };
}

function groupBody(create: boolean): Schema {
  const schema = { type: 'object', additionalProperties: false, properties: GROUP_BODY_FIELDS, ...(create ? { required: ['name'] } : {}) };
  return { required: create, content: { 'application/json': { schema } } };
}

function operation(route: RouteInfo, door: DoorConfig | undefined): Schema {
  const { path, params } = openApiPath(route.url);
  const errorBody = errorBodyUsed(route, door);
  const key = `${route.method} ${path}`;
  const parameters: Schema[] = params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  for (const h of door?.requires_headers ?? [])
    parameters.push({ name: h.name, in: 'header', required: true, schema: { type: 'string', pattern: h.pattern } });
  if (key === 'GET /v1/keys') {
    parameters.push({
      name: 'limit',
      in: 'query',
      schema: { type: 'integer', minimum: LIST_LIMIT.min, maximum: LIST_LIMIT.max, default: LIST_LIMIT.default },
    });
    parameters.push({ name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0, default: 0 } });
  }
  if (key === 'GET /v1/audit') parameters.push(...AUDIT_QUERY);
  const op: Schema = {
    summary: door
      ? `Model door '${door.name}': serves ${door.serves.kinds.join(', ')} models of vendors ${door.serves.vendors.map((v) => v.toUpperCase()).join(', ')}.`
      : (SUMMARIES[key] ?? `${route.method} ${path}`),
    operationId: `${route.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    security: securityFor(route.method, path, door),
    responses: {
      '200': { description: 'Success' },
      ...Object.fromEntries(
        [400, 401, 402, 403, 404, 413, 429, 502, 503].filter((s) => door || s !== 402).map((s) => [String(s), errorResponse(s, errorBody)]),
      ),
    },
  };
  if (parameters.length) op.parameters = parameters;
  if (door && route.method === 'POST') op.requestBody = doorRequestBody(door);
  if (key === 'POST /v1/keys') op.requestBody = keyBody(true);
  if (key === 'PATCH /v1/keys/{id}') op.requestBody = keyBody(false);
  if (key === 'POST /v1/key-groups' || key === 'PATCH /v1/key-groups/{id}') op.requestBody = groupBody(key.startsWith('POST'));
  return op;
}

/** The error body a route answers in: its door's format's, else the one its route declares, else the gateway's own. */
const errorBodyUsed = (route: RouteInfo, door: DoorConfig | undefined): ErrorBody =>
  door ? errorBodyOf(door) : (route.errorBody ?? gatewayErrorBody);

export function openApiDocument(routes: readonly RouteInfo[], doors: Record<string, DoorConfig>, version: string): Schema {
  const doorByRoute = new Map(Object.values(doors).map((d) => [`POST ${d.path}`, d]));
  const paths: Record<string, Record<string, Schema>> = {};
  const errorSchemas: Record<string, Schema> = { [gatewayErrorBody.name]: gatewayErrorBody.schema };
  for (const route of routes) {
    const { path } = openApiPath(route.url);
    const door = doorByRoute.get(`${route.method} ${route.url}`);
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(route, door);
    const body = errorBodyUsed(route, door);
    errorSchemas[body.name] = body.schema;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'AI gateway',
      version,
      description: 'One base URL and one key scheme in front of five model vendors, paid from prepaid credits.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (sk-svc-…).' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key, where the door accepts x-api-key.' },
        managementKey: { type: 'http', scheme: 'bearer', description: 'A management key of the wallet.' },
        // Named only in the operator's description, which lists the admin routes.
        ...(routes.some((r) => r.url.startsWith('/admin/'))
          ? { adminToken: { type: 'http', scheme: 'bearer', description: 'GATEWAY_ADMIN_TOKEN.' } }
          : {}),
      },
      schemas: errorSchemas,
    },
  };
}
