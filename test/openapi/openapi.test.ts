// GET /openapi.json is a valid OpenAPI 3.1 document, built from what the gateway serves: every path the public
// interface names, each door's required fields and headers from doors.yaml, and the key doors' field table that
// the key checks enforce. Anyone gets the public doors only; the admin token gets every route the app registered.
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredRoutes } from '../../engine/http/route-list.ts';
import { KEY_BODY_FIELDS } from '../../engine/keys/validate.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { tempCatalogTree } from '../helpers/temp-catalog.ts';

let t: TestGateway;
let doc: any;
/** The description the operator gets, with the admin token. */
let operatorDoc: any;
const ADMIN = { authorization: 'Bearer test-admin-token' };
beforeAll(async () => {
  t = await startTestGateway();
  const res = await fetch(`${t.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = await res.json();
  operatorDoc = await (await fetch(`${t.url}/openapi.json`, { headers: ADMIN })).json();
});
afterAll(() => t?.close());

/** Every `METHOD /path` the public interface names, with `{id}` placeholders as written there. */
function interfacePaths(): string[] {
  const text = readFileSync('/work/shared/spec/interface.md', 'utf8').replace(/,\s*(?=(GET|POST|PATCH|DELETE) \/)/g, '\n');
  const found = new Set<string>();
  for (const m of text.matchAll(/\b(GET|POST|PATCH|DELETE) (\/v1\/[A-Za-z0-9_/{}.-]*[A-Za-z0-9_}])/g)) found.add(`${m[1]} ${m[2]}`);
  return [...found];
}

describe('the API description', () => {
  it('validates as OpenAPI 3.1, the public and the operator’s alike', async () => {
    for (const d of [doc, operatorDoc]) {
      const result = await new Validator().validate(d);
      expect(result.errors ?? []).toEqual([]);
      expect(result.valid).toBe(true);
      expect(d.openapi).toBe('3.1.0');
    }
  });

  it('tells anyone, a client with its API key included, only of the public doors: no admin API, dashboard or metrics', async () => {
    const asClient = await (await fetch(`${t.url}/openapi.json`, { headers: { authorization: `Bearer ${t.apiKey}` } })).json();
    const wrongToken = await (await fetch(`${t.url}/openapi.json`, { headers: { authorization: 'Bearer test-admin-tokenx' } })).json();
    for (const d of [doc, asClient, wrongToken]) {
      const paths = Object.keys(d.paths);
      expect(paths.filter((p) => !p.startsWith('/v1/') && p !== '/openapi.json')).toEqual([]);
      expect(paths).toContain('/v1/chat/completions');
      expect(JSON.stringify(d)).not.toMatch(/\/admin\/|\/dashboard|adminToken/);
    }
    expect(Object.keys(operatorDoc.paths)).toEqual(expect.arrayContaining(['/admin/v1/wallets', '/dashboard/wallet', '/metrics']));
  });

  it('lists every path of the public interface', () => {
    const listed = interfacePaths();
    expect(listed.length).toBeGreaterThan(15);
    for (const entry of listed) {
      const [method, path] = entry.split(' ');
      expect(doc.paths[path!]?.[method!.toLowerCase()], `${entry} is missing`).toBeDefined();
    }
  });

  it('describes to the operator every route the app registered, and nothing it does not serve', () => {
    const routes = registeredRoutes(t.gw.app);
    const described = Object.entries(operatorDoc.paths).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const served = routes.map((r) => `${r.method} ${r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
    expect(new Set(described)).toEqual(new Set(served));
  });

  it("takes each door's required fields, headers, key headers and error shape from doors.yaml", () => {
    const messages = doc.paths['/v1/messages'].post;
    expect(messages.requestBody.content['application/json'].schema.required).toEqual(['model', 'max_tokens', 'messages']);
    expect(messages.parameters).toContainEqual(expect.objectContaining({ name: 'anthropic-version', in: 'header', required: true }));
    expect(messages.security).toEqual([{ apiKey: [] }, { apiKeyHeader: [] }]);
    expect(messages.responses['402'].content['application/json'].schema.$ref).toBe('#/components/schemas/MessagesError');
    const chat = doc.paths['/v1/chat/completions'].post;
    expect(chat.responses['400'].content['application/json'].schema.$ref).toBe('#/components/schemas/ChatError');
    expect(doc.paths['/v1/images/edits'].post.requestBody.content['multipart/form-data'].schema.properties.image).toBeDefined();
    expect(Object.keys(doc.paths['/v1/videos'].post.requestBody.content).sort()).toEqual(['application/json', 'multipart/form-data']);
  });

  it('publishes the key doors’ field table as the checks enforce it', () => {
    const create = doc.paths['/v1/keys'].post.requestBody.content['application/json'].schema;
    const patch = doc.paths['/v1/keys/{id}'].patch.requestBody.content['application/json'].schema;
    expect(Object.keys(create.properties).sort()).toEqual(Object.keys(KEY_BODY_FIELDS).sort());
    expect(create.properties.count).toMatchObject({ minimum: 1, maximum: 100 });
    expect(create.properties.name.maxLength).toBe(40);
    expect(patch.properties.count).toBeUndefined();
    expect(patch.properties.name_prefix).toBeUndefined();
    expect(doc.paths['/v1/keys'].get.security).toEqual([{ managementKey: [] }]);
  });

  it('follows a reload: a door whose required fields change is described with the new ones', async () => {
    const tree = tempCatalogTree();
    const g = await startTestGateway({ dirs: { config: tree.config, catalog: tree.catalog } });
    try {
      tree.edit('config/doors.yaml', (y) =>
        y.replace(/(embeddings:\n(?:.*\n)*? {2}requires: )\[model, input\]/, '$1[model, input, dimensions]'),
      );
      expect(g.gw.reload().ok).toBe(true);
      const after = await (await fetch(`${g.url}/openapi.json`)).json();
      expect(after.paths['/v1/embeddings'].post.requestBody.content['application/json'].schema.required).toEqual([
        'model',
        'input',
        'dimensions',
      ]);
    } finally {
      await g.close();
      tree.remove();
    }
  });
});
