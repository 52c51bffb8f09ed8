// Revocation across processes on one PostgreSQL database: a key closed in this process is refused by
// another process, whose lookup was cached, within one second (LISTEN/NOTIFY).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../engine/core/clock.ts';
import { createKeyService, type KeyService } from '../../engine/keys/index.ts';
import { createLedger } from '../../engine/money/ledger.ts';
import { openTestPostgres, postgresAvailability, REQUIRE_POSTGRES, type TestPostgres } from '../helpers/databases.ts';

const available = postgresAvailability.ok || REQUIRE_POSTGRES;
if (!postgresAvailability.ok && !REQUIRE_POSTGRES) console.log(`skipping revocation across processes: ${postgresAvailability.reason}`);

describe.runIf(available)('revocation across processes [postgres]', () => {
  let pg: TestPostgres;
  let keys: KeyService;
  beforeAll(async () => {
    pg = await openTestPostgres({ migrate: true });
    keys = createKeyService(pg.db, { clock: systemClock });
  });
  afterAll(async () => {
    await keys?.close();
    await pg?.cleanup();
  });

  it('a key closed here is refused by another process within one second', async () => {
    const wallet = await createLedger(pg.db, { clock: systemClock }).createWallet({ credits: 10 });
    const { id, key } = await keys.createApiKey(wallet.id);
    const child = spawn(process.execPath, ['--import', 'tsx', join('test', 'fixtures', 'auth-child.ts')], {
      env: { ...process.env, DATABASE_URL: pg.url, KEY: key },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((r) => child.once('exit', r));
    const events: Record<string, number | string>[] = [];
    createInterface({ input: child.stdout! }).on('line', (l) => events.push(JSON.parse(l)));
    const waitFor = async (event: string) => {
      for (let i = 0; i < 300 && !events.some((e) => e.event === event); i++) await new Promise((r) => setTimeout(r, 50));
      const found = events.find((e) => e.event === event);
      if (!found) throw new Error(`the child never said ${event}`);
      return found;
    };
    await waitFor('authorized');
    const closedAt = Date.now();
    expect(await keys.closeKey(id)).toBe(true);
    const refused = await waitFor('refused');
    expect(Number(refused.at) - closedAt).toBeLessThan(1000);
    await exited;
  });
});
