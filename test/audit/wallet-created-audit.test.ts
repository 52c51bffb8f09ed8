// The credits a wallet is created with are a money change like any top-up: the audit trail records them, written
// in the creation's own transaction (issue 39: later top-ups were in the trail, the first credits were not).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAudit, parseAuditQuery } from '../../engine/audit/query.ts';
import { walletCreate } from '../../engine/cli/wallet-commands.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let t: TestGateway;
beforeAll(async () => {
  t = await startTestGateway();
});
afterAll(() => t?.close());

const admin = (method: string, path: string, body?: unknown) =>
  fetch(`${t.url}/admin/v1/wallets${path}`, {
    method,
    headers: { authorization: 'Bearer test-admin-token', ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

const entries = async (walletId: string) => ((await (await admin('GET', `/${walletId}/audit`)).json()) as any).data as any[];

describe('a wallet created with credits has them in its audit trail', () => {
  it('through the admin API, as the operator, with the lot it made', async () => {
    const made = (await (await admin('POST', '', { credits: 7000 })).json()) as any;
    const added = (await entries(made.id)).filter((e) => e.action === 'credits.added');
    expect(added).toHaveLength(1);
    expect(added[0].after).toEqual({ credits: 7000, vendors: null });
    expect(added[0].actor).toEqual({ kind: 'operator', id: 'admin_api' });
    const lots = await t.gw.db.query<{ id: string }>('SELECT id FROM credit_lots WHERE wallet_id = $1', [made.id]);
    expect(added[0].target_id).toBe(lots.rows[0]!.id);
  });

  it('through the command line, as the operator cli', async () => {
    const made = await walletCreate(t.gw.db, { credits: '25' });
    const page = await listAudit(t.gw.db, made.id, parseAuditQuery({}));
    const added = page.data.filter((e: any) => e.action === 'credits.added') as any[];
    expect(added).toHaveLength(1);
    expect(added[0].after).toEqual({ credits: 25, vendors: null });
    expect(added[0].actor).toMatchObject({ kind: 'operator', id: 'cli' });
  });

  it('a wallet created without credits has no credits entry', async () => {
    const made = (await (await admin('POST', '', {})).json()) as any;
    expect((await entries(made.id)).filter((e) => e.action === 'credits.added')).toHaveLength(0);
  });
});
