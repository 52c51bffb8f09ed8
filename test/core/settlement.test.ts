import { describe, expect, it } from 'vitest';
import type { Accounts, Caller, Hold } from '../../engine/money/accounts.ts';
import { finishHold } from '../../engine/calls/settlement.ts';
import { LateSettlements } from '../../engine/calls/late-settlements.ts';

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
    expect(await finishHold(accounts, caller, hold, 42n, quietLog, { backoffMs: 1 })).toBe(42n);
    expect(calls.settle).toBe(3);
  });

  it('hands a settle that failed three times to the late settlements, which write it once the database answers', async () => {
    const { accounts, calls } = flakyAccounts(6);
    const late = new LateSettlements({ warn: () => undefined, info: () => undefined, error: () => undefined }, { firstDelayMs: 1, maxDelayMs: 2 });
    expect(await finishHold(accounts, caller, hold, 42n, quietLog, { late, backoffMs: 1 })).toBe(42n);
    expect(calls.settle).toBe(3);
    expect(late.size).toBe(1);
    for (let i = 0; i < 200 && late.size > 0; i++) await new Promise((r) => setTimeout(r, 2));
    expect(late.size).toBe(0);
    expect(calls.settle).toBe(7); // three tries, then three more failures, then the one that landed
    await new Promise((r) => setTimeout(r, 20));
    expect(calls.settle, 'tried again after it landed').toBe(7);
  });

  it('stops at shutdown and says how many settles were lost', async () => {
    const { accounts } = flakyAccounts(1000);
    const late = new LateSettlements({ warn: () => undefined, info: () => undefined, error: () => undefined }, { firstDelayMs: 1, maxDelayMs: 2 });
    await finishHold(accounts, caller, hold, 42n, quietLog, { late, backoffMs: 1 });
    expect(await late.drain(30)).toBe(1);
    expect(late.size).toBe(0);
  });

  it('without late settlements, gives up after three tries and leaves the hold to the sweeper', async () => {
    const { accounts, calls } = flakyAccounts(5);
    expect(await finishHold(accounts, caller, hold, 42n, quietLog, { backoffMs: 1 })).toBe(0n);
    expect(calls.settle).toBe(3);
  });

  it('releases when there is no cost, retrying too', async () => {
    const { accounts, calls } = flakyAccounts(1);
    expect(await finishHold(accounts, caller, hold, null, quietLog, { backoffMs: 1 })).toBe(0n);
    expect(calls.release).toBe(2);
    expect(calls.settle).toBe(0);
  });
});
