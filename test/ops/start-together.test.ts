// Issue 26: gateways on many hosts start together on one PostgreSQL. Two processes started at the same instant
// on an empty database both serve, the migrations applied once; a migration changed after it was applied stops
// a start with its name.
import { afterAll, describe, expect, it } from 'vitest';
import { loadMigrations } from '../../engine/db/migrate.ts';
import { openTestPostgres, postgresAvailability, type TestPostgres } from '../helpers/databases.ts';
import { type ChildGateway, startChildGateway } from './child-gateway.ts';

const started: ChildGateway[] = [];
let pg: TestPostgres | undefined;
afterAll(async () => {
  for (const g of started) g.remove();
  await pg?.cleanup();
});

describe.skipIf(!postgresAvailability.ok)('gateways starting together on one PostgreSQL', () => {
  it('both serve on an empty database, which is migrated once; an edited applied migration stops the next start', async () => {
    pg = await openTestPostgres({ migrate: false });
    const env = { DATABASE_URL: pg.url };
    const both = await Promise.all([0, 1].map(() => startChildGateway(env, { apiKey: 'none-needed' })));
    started.push(...both);
    for (const g of both) expect((await fetch(`${g.base}/readyz`)).status).toBe(200);

    const files = loadMigrations();
    const rows = (await pg.db.query<{ name: string; checksum: string }>('SELECT name, checksum FROM schema_migrations ORDER BY name')).rows;
    expect(rows).toEqual(files.map((m) => ({ name: m.name, checksum: m.checksum })));

    // As if 003_videos.sql had been edited since this database applied it.
    await pg.db.query(`UPDATE schema_migrations SET checksum = 'as-applied-before-the-edit' WHERE name = '003_videos.sql'`);
    const third = await startChildGateway(env, { apiKey: 'none-needed', waitForBanner: false });
    started.push(third);
    expect(await third.exited).toBe(1);
    expect(third.out.text).toContain('The gateway did not start: migration 003_videos.sql was changed after it was applied');
    expect(third.out.text).not.toMatch(/^\s+at /m);
  }, 180_000);
});
