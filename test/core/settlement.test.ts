import { describe, expect, it } from 'vitest';
import type { Accounts, Caller, Hold } from '../../engine/money/accounts.ts';
import { finishHold } from '../../engine/calls/settlement.ts';

const caller: Caller = { keyId: 'k', walletId: 'w', keyPrefix: 'sk-svc-x…', audience: null };
const hold: Hold = { callId: 'c', amountNano: 100n };
const quietLog = { error: () => undefined };

function flakyAccounts(failures: number) {
  const calls = { settle: 0, release: 0 };
  const accounts = {
    async settle(_c: Caller, _h: Hold, cost: bigint) {
      calls.settle++;
      if (calls.settle <= failures) throw new Error('connection reset');
      return cost;
    },
    async release() {
      calls.release++;
      if (calls.release <= failures) throw new Error('connection reset');
    },
  } as unknown as Accounts;
  return { accounts, calls };
}

describe('finishing a hold', () => {
  it('retries a settle that failed on a passing fault, and charges once', async () => {
    const { accounts, calls } = flakyAccounts(2);
    expect(await finishHold(accounts, caller, hold, 42n, quietLog, 1)).toBe(42n);
    expect(calls.settle).toBe(3);
  });

  it('gives up after three tries and leaves the hold to the sweeper', async () => {
    const { accounts, calls } = flakyAccounts(5);
    expect(await finishHold(accounts, caller, hold, 42n, quietLog, 1)).toBe(0n);
    expect(calls.settle).toBe(3);
  });

  it('releases when there is no cost, retrying too', async () => {
    const { accounts, calls } = flakyAccounts(1);
    expect(await finishHold(accounts, caller, hold, null, quietLog, 1)).toBe(0n);
    expect(calls.release).toBe(2);
    expect(calls.settle).toBe(0);
  });
});
