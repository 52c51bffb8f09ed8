// A start that fails after the database opened closes what it had opened, through the same hooks as a stop: the
// embedded data folder is free again at once (the next start in this very process takes it), where it used to
// stay held until the process exited.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createGateway } from '../../engine/gateway.ts';

const firstRun = vi.hoisted(() => ({ fails: true }));
vi.mock('../../engine/admin/first-run-wallet.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../engine/admin/first-run-wallet.ts')>();
  return {
    ...real,
    firstRunWallet: async (...args: Parameters<typeof real.firstRunWallet>) => {
      if (firstRun.fails) throw new Error('the first-run wallet could not be made');
      return real.firstRunWallet(...args);
    },
  };
});

const dataDir = mkdtempSync(join(tmpdir(), 'gw-failed-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('a start that fails after the database opened', () => {
  it('closes what it opened, so the data folder is free again', async () => {
    // Every room is open by then: the database, the money, the keys, the simulator, the alerts and the workers.
    const env = { GATEWAY_DATA_DIR: dataDir, GATEWAY_SIMULATE: '1' };
    await expect(createGateway({ env, logger: false, sweeper: false })).rejects.toThrow('the first-run wallet could not be made');
    firstRun.fails = false;
    const gw = await createGateway({ env, logger: false, sweeper: false });
    expect(gw.devWallet).not.toBeNull();
    await gw.close();
  }, 60_000);
});
