// A start that fails after the database opened closes what it had opened, through the same hooks as a stop: the
// embedded data folder is free again at once (the next start in this very process takes it), where it used to
// stay held until the process exited.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createGateway } from '../../engine/gateway.ts';

const upkeep = vi.hoisted(() => ({ fails: true }));
vi.mock('../../engine/usage/retention.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../engine/usage/retention.ts')>();
  return {
    ...real,
    startUsageRecordUpkeep: async (...args: Parameters<typeof real.startUsageRecordUpkeep>) => {
      if (upkeep.fails) throw new Error('the usage records upkeep could not start');
      return real.startUsageRecordUpkeep(...args);
    },
  };
});

const dataDir = mkdtempSync(join(tmpdir(), 'gw-failed-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('a start that fails after the database opened', () => {
  it('closes what it opened, so the data folder is free again', async () => {
    // Every room is open by then: the database, the money, the keys, the simulator and the routes; the workers start.
    const env = { GATEWAY_DATA_DIR: dataDir, GATEWAY_SIMULATE: '1' };
    await expect(createGateway({ env, logger: false, sweeper: false })).rejects.toThrow('the usage records upkeep could not start');
    upkeep.fails = false;
    const gw = await createGateway({ env, logger: false, sweeper: false });
    expect((await gw.firstRun()).devWallet).not.toBeNull();
    await gw.close();
  }, 60_000);
});
