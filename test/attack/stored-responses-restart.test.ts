// Issue 39 on the embedded database: whose each stored answer is survives a restart of the gateway on the same
// data folder, and goes with the usage records when they are pruned (the wallet's own continuation is then a
// 404 too, as the vendor's copy is no longer one the gateway can vouch for).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pruneVendorResponses } from '../../engine/usage/vendor-responses.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'gw-stored-'));
let t: TestGateway | undefined;
afterAll(async () => {
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const respond = (g: TestGateway, key: string, body: Record<string, unknown>) =>
  fetch(`${g.url}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'b-5-mini', max_output_tokens: 32, ...body }),
  });

describe('a stored answer is its wallet’s after a restart, until its usage records are pruned', () => {
  it('X continues after the restart; Y, another wallet of the restarted gateway, gets the 404; pruned, neither is served', async () => {
    const first = await startTestGateway({ env: { GATEWAY_DATA_DIR: dataDir } });
    const x = first.apiKey;
    const answer = (await (await respond(first, x, { input: 'my essay' })).json()) as { id: string; output: { id: string }[] };
    await first.close();

    t = await startTestGateway({ env: { GATEWAY_DATA_DIR: dataDir } });
    const y = t.apiKey; // a new wallet made by this start
    const refused = await respond(t, y, { previous_response_id: answer.id, input: 'go on' });
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as any).error.param).toBe('previous_response_id');
    expect(t.sim.received.length).toBe(0);
    const continued = await respond(t, x, { input: [{ type: 'item_reference', id: answer.output[0]!.id }] });
    expect(continued.status, await continued.text()).toBe(200);

    await pruneVendorResponses(t.gw.db, new Date('2100-01-01T00:00:00Z'));
    const pruned = await respond(t, x, { previous_response_id: answer.id, input: 'go on' });
    expect(pruned.status).toBe(404);
    expect(t.sim.received.length).toBe(1);
  }, 60_000);
});
