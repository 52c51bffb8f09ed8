// The student audience rules, now YAML (config/callers.yaml) evaluated by the same refusal machinery as the
// door refusals. The first block is the unit test that covered the coded rules, unchanged but for
// `audienceRefusal`, which here runs the YAML; the rest proves the YAML is what the gateway reads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callerRefusals, refusalError } from '../../engine/calls/refusals.ts';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import { checkCatalog } from '../../engine/cli/catalog-cli.ts';
import type { GatewayError } from '../../engine/core/errors.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import type { Audience, AuthContext } from '../../engine/keys/index.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const shipped = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1).config;

/** The caller refusals of a door (by name or path) for a key of this audience, as prepareCall runs them. */
function audienceRefusal(audience: Audience | null, door: string, body: unknown): GatewayError | null {
  const name = Object.values(shipped.doors).find((d) => d.path === door)?.name ?? door;
  const view = {
    body: (body && typeof body === 'object' && !Array.isArray(body) ? body : {}) as JsonObject,
    headers: {},
    caller: { audience },
  };
  return refusalError(callerRefusals(shipped, name), view) ?? null;
}

describe('audienceRefusal', () => {
  const student = 'student' as const;
  const cases: [string, unknown][] = [
    ['chat', { tools: [{ type: 'web_search' }] }],
    ['chat', { web_search_options: {} }],
    ['responses', { tools: [{ type: 'function', name: 'f' }, { type: 'web_search_preview' }] }],
    ['responses', { tools: [{ type: 'web_search_preview_2025_03_11' }] }],
    ['responses', { tools: [{ type: 'mcp', server_url: 'https://x' }] }],
    ['messages', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }],
    ['messages', { tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] }],
    ['messages', { mcp_servers: [{ type: 'url', url: 'https://x' }] }],
    ['messages', { tools: [{ type: 'mcp_toolset', mcp_server_name: 'x' }] }],
  ];

  it('refuses student keys web search, page reading, remote MCP and videos with 403 permission_error', () => {
    for (const [door, body] of cases) {
      const e = audienceRefusal(student, door, body);
      expect(e, `${door} ${JSON.stringify(body)}`).not.toBeNull();
      expect(e).toMatchObject({ status: 403, type: 'permission_error' });
    }
    expect(audienceRefusal(student, 'chat', { tools: [{ type: 'web_search' }] })!.message).toContain('web search');
    expect(audienceRefusal(student, 'messages', { tools: [{ type: 'web_fetch_20250910' }] })!.message).toContain('web page reading');
    expect(audienceRefusal(student, 'responses', { tools: [{ type: 'mcp' }] })!.message).toContain('remote MCP');
    for (const door of ['videos', '/v1/videos']) {
      const e = audienceRefusal(student, door, { model: 'video-d-1', prompt: 'x' });
      expect(e).toMatchObject({ status: 403, type: 'permission_error' });
      expect(e!.message).toContain('video');
    }
  });

  it('lets teacher keys and keys without audience through, and students use ordinary tools', () => {
    for (const [door, body] of cases) {
      expect(audienceRefusal('teacher', door, body)).toBeNull();
      expect(audienceRefusal(null, door, body)).toBeNull();
    }
    expect(audienceRefusal('teacher', 'videos', {})).toBeNull();
    expect(audienceRefusal(student, 'chat', { tools: [{ type: 'function', function: { name: 'web_search' } }] })).toBeNull();
    expect(audienceRefusal(student, 'messages', { tools: [{ type: 'bash_20250124', name: 'bash' }], mcp_servers: [] })).toBeNull();
    expect(audienceRefusal(student, 'responses', { tools: [{ type: 'file_search' }] })).toBeNull();
    expect(audienceRefusal(student, 'chat', { messages: [] })).toBeNull();
    expect(audienceRefusal(student, 'embeddings', 'not an object')).toBeNull();
  });

  it('works from an AuthContext', () => {
    const auth = { audience: 'student' } as AuthContext;
    expect(audienceRefusal(auth.audience, 'images', { model: 'x' })).toBeNull();
  });
});

describe('caller refusals through the doors', () => {
  let tree: TempTree;
  let t: TestGateway;
  let student: string;
  let teacher: string;
  beforeAll(async () => {
    tree = tempCatalogTree();
    t = await startTestGateway({ dirs: tree });
    const wallet = await t.gw.ledger.createWallet({ credits: 10_000_000, splitsUsage: true });
    student = (await t.gw.keys.createApiKey(wallet.id, { audience: 'student' })).key;
    teacher = (await t.gw.keys.createApiKey(wallet.id, { audience: 'teacher' })).key;
  });
  afterAll(async () => {
    await t?.close();
    tree?.remove();
  });

  async function post(key: string, path: string, body: Record<string, unknown>) {
    const res = await fetch(`${t.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  }
  const listed = async (key: string): Promise<string[]> =>
    ((await (await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as any).data.map((m: any) => m.id);
  const reload = () => fetch(`${t.url}/admin/v1/reload`, { method: 'POST', headers: { authorization: 'Bearer test-admin-token' } });

  const chat = { model: 'b-5', messages: [{ role: 'user', content: 'hi' }] };

  it('answer 403 permission_error with the sentences the coded rules said, in each door shape, before any charge', async () => {
    const wallet = (await t.gw.keys.authenticate(student, 'api')).walletId;
    const before = (await t.gw.ledger.balance(wallet)).availableNano;
    const search = await post(student, '/v1/chat/completions', {
      ...chat,
      tools: [{ type: 'function', function: { name: 'f' } }, { type: 'web_search' }],
    });
    expect(search.status).toBe(403);
    expect(search.body.error).toMatchObject({
      type: 'permission_error',
      message:
        'Student keys cannot use web search (tools[1].type "web_search"). Remove it from the request, or use a key whose audience is teacher.',
    });
    const options = await post(student, '/v1/chat/completions', { ...chat, web_search_options: {} });
    expect(options.body.error.message).toBe(
      'Student keys cannot use web search (web_search_options). Remove it from the request, or use a key whose audience is teacher.',
    );
    const mcp = await post(student, '/v1/messages', {
      model: 'a-top-5.5',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      mcp_servers: [{ type: 'url', url: 'https://x' }],
    });
    expect(mcp.status).toBe(403);
    expect(mcp.body).toEqual({
      type: 'error',
      error: {
        type: 'permission_error',
        message: 'Student keys cannot use remote MCP (mcp_servers). Remove it from the request, or use a key whose audience is teacher.',
      },
    });
    const video = await post(student, '/v1/videos', { model: 'video-d-1', prompt: 'x' });
    expect([video.status, video.body.error.message]).toEqual([
      403,
      'Student keys cannot create videos. Use a key whose audience is teacher.',
    ]);
    expect((await t.gw.ledger.balance(wallet)).availableNano).toBe(before);
  });

  it('match a tool type whatever its case, and let teachers and ordinary tools through', async () => {
    const shouted = await post(student, '/v1/chat/completions', { ...chat, tools: [{ type: 'Web_Search_Preview' }] });
    expect(shouted.status).toBe(403);
    expect(shouted.body.error.message).toContain('web search (tools[0].type "Web_Search_Preview")');
    expect((await post(teacher, '/v1/responses', { model: 'b-5', input: 'x', tools: [{ type: 'web_search' }] })).status).toBe(200);
    expect(
      (
        await post(student, '/v1/messages', {
          model: 'a-top-5.5',
          max_tokens: 10,
          messages: [{ role: 'user', content: 'hi' }],
          mcp_servers: [],
        })
      ).status,
    ).toBe(200);
  });

  it('GET /v1/models and the doors follow config/callers.yaml, reload included', async () => {
    expect(await listed(student)).not.toContain('video-d-1');
    expect(await listed(student)).toContain('tts-1');
    tree.edit('config/callers.yaml', (text) =>
      text.replace(
        /- doors: \[videos\]\n(.*\n){2}.*say: .*\n/,
        '- doors: [speech]\n    when: { caller: { audience: student } }\n    status: 403\n    say: "Student keys cannot make speech."\n',
      ),
    );
    expect((await reload()).status).toBe(200);
    const now = await listed(student);
    expect(now).toContain('video-d-1');
    expect(now).not.toContain('tts-1');
    expect(await listed(teacher)).toContain('tts-1');
    const speech = await post(student, '/v1/audio/speech', { model: 'tts-1', input: 'hello', voice: 'alloy' });
    expect([speech.status, speech.body.error.type, speech.body.error.message]).toEqual([
      403,
      'permission_error',
      'Student keys cannot make speech.',
    ]);
  });

  it('a caller refusal naming a door doors.yaml does not define is refused at load, with file and line', () => {
    const bad = tempCatalogTree();
    try {
      bad.edit('config/callers.yaml', (text) => text.replace('- doors: [videos]', '- doors: [video]'));
      const line =
        bad
          .read('config/callers.yaml')
          .split('\n')
          .findIndex((l) => l.includes('doors: [video]')) + 1;
      expect(checkCatalog(bad)).toContain(
        `${bad.config}/callers.yaml:${line}: caller refusal names door 'video', which config/doors.yaml does not define`,
      );
    } finally {
      bad.remove();
    }
  });
});
