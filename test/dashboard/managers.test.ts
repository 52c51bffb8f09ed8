// Managers and the sessions sign-in through the identity provider opens, on PGlite and PostgreSQL, without a
// browser: who may open which wallet (owner id or manager row; e-mail matching ignores case), a manager's role
// read again at every request (changed or removed: at once), an owner change ending every session, each
// manager change audited once with its actor and the role before and after; and the dashboard's route table
// (roles.ts) covering every route the dashboard registers. And teachers: a manager once given a class stays limited
// to classes when the class is taken away or deleted, never widened to the whole wallet (an attack found a teacher
// whose last class was deleted managing every class and key of the school).
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Actor } from '../../engine/audit/trail.ts';
import { fixedClock } from '../../engine/core/clock.ts';
import type { DashboardDeps } from '../../engine/dashboard/deps.ts';
import { managerGroups, setManagerGroup } from '../../engine/dashboard/group-scope.ts';
import { permissionOf, ROUTE_PERMISSIONS } from '../../engine/dashboard/roles.ts';
import { registerDashboard } from '../../engine/dashboard/routes.ts';
import { createSessionStore } from '../../engine/dashboard/sessions.ts';
import { normalizeIdentity, removeManager, setManager, walletsFor } from '../../engine/identity/managers.ts';
import { providerSettings } from '../../engine/identity/provider.ts';
import { describeEachDatabase } from '../helpers/databases.ts';
import { TEST_NOW } from '../helpers/gateway.ts';

const clock = fixedClock(TEST_NOW);
const OWNER: Actor = { kind: 'owner', id: 'alice', ip: '127.0.0.1', userAgent: 'test' };

describeEachDatabase('managers and provider sessions', (getDb) => {
  it('opens sessions by owner id or manager row, re-reads the role, and ends them on removal or owner change', async () => {
    const db = getDb();
    await db.query(`INSERT INTO wallets (id, owner_id) VALUES ('wal_m1', 'Alice@School.example'), ('wal_m2', 'bob@school.example')`);
    const sessions = createSessionStore(db, clock);

    expect(await setManager(db, 'wal_m2', 'alice@school.example', 'viewer', OWNER, clock.now())).toBe('added');
    const access = await walletsFor(db, 'alice@school.example', 'email');
    expect(access.map((a) => [a.walletId, a.role, a.asOwner])).toEqual([
      ['wal_m1', 'owner', true],
      ['wal_m2', 'viewer', false],
    ]);
    // Subjects compare exactly.
    expect(await walletsFor(db, 'alice@school.example', 'subject')).toHaveLength(1);

    const asOwner = (await sessions.openFor(access[0]!, 'alice@school.example'))!;
    expect(asOwner.session).toMatchObject({
      walletId: 'wal_m1',
      role: 'owner',
      isManager: false,
      actorId: 'Alice@School.example',
      via: 'provider',
    });
    const asViewer = (await sessions.openFor(access[1]!, 'alice@school.example'))!;
    expect(await sessions.find(asViewer.secret)).toMatchObject({
      walletId: 'wal_m2',
      role: 'viewer',
      isManager: true,
      actorId: 'alice@school.example',
    });

    expect(await setManager(db, 'wal_m2', 'alice@school.example', 'manager', OWNER, clock.now())).toBe('changed');
    expect((await sessions.find(asViewer.secret))?.role).toBe('manager');
    expect(await setManager(db, 'wal_m2', 'alice@school.example', 'manager', OWNER, clock.now())).toBe('unchanged');

    await removeManager(db, 'wal_m2', 'alice@school.example', OWNER, clock.now());
    expect(await sessions.find(asViewer.secret)).toBeNull();
    expect(await sessions.openFor(access[1]!, 'alice@school.example')).toBeNull(); // the lookup is stale: nothing opens
    await expect(removeManager(db, 'wal_m2', 'alice@school.example', OWNER, clock.now())).rejects.toMatchObject({ status: 404 });

    await db.query(`UPDATE wallets SET owner_id = 'carol', owner_generation = owner_generation + 1 WHERE id = 'wal_m1'`);
    expect(await sessions.find(asOwner.secret)).toBeNull();

    const audit = await db.query<{
      action: string;
      actor_kind: string;
      actor_id: string;
      target_id: string;
      before: unknown;
      after: unknown;
    }>(`SELECT action, actor_kind, actor_id, target_id, before, after FROM wallet_audit WHERE wallet_id = 'wal_m2' ORDER BY seq`);
    expect(audit.rows).toEqual([
      {
        action: 'manager.added',
        actor_kind: 'owner',
        actor_id: 'alice',
        target_id: 'alice@school.example',
        before: null,
        after: { identity: 'alice@school.example', role: 'viewer' },
      },
      {
        action: 'manager.changed',
        actor_kind: 'owner',
        actor_id: 'alice',
        target_id: 'alice@school.example',
        before: { identity: 'alice@school.example', role: 'viewer' },
        after: { identity: 'alice@school.example', role: 'manager' },
      },
      {
        action: 'manager.removed',
        actor_kind: 'owner',
        actor_id: 'alice',
        target_id: 'alice@school.example',
        before: { identity: 'alice@school.example', role: 'manager' },
        after: null,
      },
    ]);
  });
});

describeEachDatabase('teachers: a manager limited to classes', (getDb) => {
  it('stays limited when their classes are taken away or deleted; a manager never given one has the whole wallet', async () => {
    const db = getDb();
    const now = clock.now();
    await db.query(`INSERT INTO wallets (id, owner_id) VALUES ('wal_t1', 'owner-t')`);
    await db.query(
      `INSERT INTO key_groups (id, wallet_id, name, created_at) VALUES ('grp_t1', 'wal_t1', 'T1', $1), ('grp_t2', 'wal_t1', 'T2', $1)`,
      [now],
    );
    for (const who of ['deleted@school.example', 'taken@school.example', 'whole@school.example'])
      await setManager(db, 'wal_t1', who, 'manager', OWNER, now);
    const groupsOf = (who: string) => managerGroups(db, 'wal_t1', who);

    expect(await groupsOf('whole@school.example')).toBeNull(); // never given a class: the whole wallet

    await setManagerGroup(db, 'wal_t1', 'deleted@school.example', 'grp_t1', true, OWNER, now);
    expect(await groupsOf('deleted@school.example')).toEqual(['grp_t1']);
    await db.query(`UPDATE key_groups SET deleted_at = $1 WHERE id = 'grp_t1'`, [now]); // the end of term
    expect(await groupsOf('deleted@school.example')).toEqual([]);

    await setManagerGroup(db, 'wal_t1', 'taken@school.example', 'grp_t2', true, OWNER, now);
    await setManagerGroup(db, 'wal_t1', 'taken@school.example', 'grp_t2', false, OWNER, now);
    expect(await groupsOf('taken@school.example')).toEqual([]);
    const taken = await db.query<{ before: unknown; after: unknown }>(
      `SELECT before, after FROM wallet_audit WHERE wallet_id = 'wal_t1' AND action = 'manager.changed' AND target_id = 'taken@school.example' ORDER BY seq`,
    );
    expect(taken.rows).toEqual([
      { before: { groups: null }, after: { groups: ['grp_t2'] } },
      { before: { groups: ['grp_t2'] }, after: { groups: [] } },
    ]);

    // Removed and added again, a manager starts afresh: the owner's way to give back the whole wallet.
    await removeManager(db, 'wal_t1', 'taken@school.example', OWNER, now);
    await setManager(db, 'wal_t1', 'taken@school.example', 'manager', OWNER, now);
    expect(await groupsOf('taken@school.example')).toBeNull();
  });
});

describe('settings and identities', () => {
  it('reads the provider settings: all three or none, https unless on this machine, subject or email', () => {
    expect(providerSettings({})).toBeNull();
    const base = {
      GATEWAY_OIDC_ISSUER: 'https://login.school.example/realms/s',
      GATEWAY_OIDC_CLIENT_ID: 'gw',
      GATEWAY_OIDC_CLIENT_SECRET: 's',
    };
    expect(providerSettings(base)).toMatchObject({ matchBy: 'subject', name: 'login.school.example', clientId: 'gw' });
    expect(providerSettings({ ...base, GATEWAY_OIDC_MATCH: 'email', GATEWAY_OIDC_NAME: 'School' })).toMatchObject({
      matchBy: 'email',
      name: 'School',
    });
    expect(() => providerSettings({ GATEWAY_OIDC_ISSUER: base.GATEWAY_OIDC_ISSUER })).toThrow(
      /missing: GATEWAY_OIDC_CLIENT_ID, GATEWAY_OIDC_CLIENT_SECRET/,
    );
    expect(() => providerSettings({ ...base, GATEWAY_OIDC_MATCH: 'name' })).toThrow(/subject or email/);
    expect(providerSettings(base)?.signOutAtProvider).toBe(false);
    expect(providerSettings({ ...base, GATEWAY_OIDC_SIGN_OUT: 'provider' })?.signOutAtProvider).toBe(true);
    expect(() => providerSettings({ ...base, GATEWAY_OIDC_SIGN_OUT: 'yes' })).toThrow(/gateway or provider/);
    expect(() => providerSettings({ ...base, GATEWAY_OIDC_ISSUER: 'http://login.school.example' })).toThrow(/must be https/);
    expect(providerSettings({ ...base, GATEWAY_OIDC_ISSUER: 'http://localhost:9000' })?.issuer.href).toBe('http://localhost:9000/');
  });

  it('normalizes identities as they are matched', () => {
    expect(normalizeIdentity('  Bob@School.Example ', 'email')).toBe('bob@school.example');
    expect(normalizeIdentity('AbC-123', 'subject')).toBe('AbC-123');
    expect(() => normalizeIdentity('bob', 'email')).toThrow(/e-mail address/);
    expect(() => normalizeIdentity('  ', 'subject')).toThrow(/1 to 200/);
  });
});

describe('the dashboard route table', () => {
  it('names every signed-in route the dashboard registers; the open ones are the sign-in doors alone', async () => {
    const app = Fastify();
    const routes: string[] = [];
    app.addHook('onRoute', (r) => {
      for (const m of [r.method].flat()) if (m !== 'HEAD') routes.push(`${m} ${r.url}`);
    });
    // Every optional page on: the provider's sign-in and the alerts page (registered only with their services).
    const alerts = { store: {}, queued: () => undefined };
    const deps = {
      db: {},
      clock,
      identity: { settings: { name: 'School', matchBy: 'subject', clientSecret: 'x' } },
      alerts,
    } as unknown as DashboardDeps;
    await registerDashboard(app, deps);
    await app.ready();
    const open = [
      'GET /dashboard/sign-in',
      'POST /dashboard/sign-in',
      'GET /dashboard/signed-out',
      'GET /dashboard/oidc/start',
      'GET /dashboard/oidc/callback',
      'POST /dashboard/oidc/choose',
      'POST /dashboard/lang',
    ];
    const unlisted = routes.filter((r) => !(r in ROUTE_PERMISSIONS) && !open.includes(r));
    expect(unlisted).toEqual([]);
    expect(Object.keys(ROUTE_PERMISSIONS).filter((r) => !routes.includes(r))).toEqual([]); // no stale entries
    expect(permissionOf('POST', '/dashboard/some-new-page')).toBe('owner'); // unknown: the owner's alone
    expect(permissionOf('HEAD', '/dashboard/wallet')).toBe('read');
    await app.close();
  });
});
