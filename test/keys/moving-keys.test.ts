// The mark of a key being moved, in one process (engine/keys/moving-keys.ts): what it refuses, what ends it, and
// the wait for the key's admissions under way.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MovingKeys } from '../../engine/keys/moving-keys.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('MovingKeys', () => {
  it("refuses the moving key's calls with a 429 to retry, and only that key's, until the key's change is applied", () => {
    const moving = new MovingKeys();
    moving.apply('moving:key_a');
    expect(() => moving.begin('key_a')).toThrow(expect.objectContaining({ status: 429, headers: { 'retry-after': '1' } }));
    moving.begin('key_b')();
    moving.apply('wallet:w1'); // another change does not end it
    expect(() => moving.begin('key_a')).toThrow(/being moved/);
    moving.apply('key_a');
    moving.begin('key_a')();
  });

  it('lapses when the end of the move is never heard', () => {
    vi.useFakeTimers();
    const moving = new MovingKeys();
    moving.apply('moving:key_a');
    vi.advanceTimersByTime(9_999);
    expect(() => moving.begin('key_a')).toThrow();
    vi.advanceTimersByTime(2);
    moving.begin('key_a')();
  });

  it('a move waits for the admissions of its key under way, not for other keys', async () => {
    const moving = new MovingKeys();
    const endA = moving.begin('key_a');
    const endB = moving.begin('key_b');
    let drained = false;
    const wait = moving.drained('moving:key_a').then(() => {
      drained = true;
    });
    await Promise.resolve();
    expect(drained).toBe(false);
    endB();
    await Promise.resolve();
    expect(drained).toBe(false);
    endA();
    endA(); // ending twice counts once
    await wait;
    expect(drained).toBe(true);
    await moving.drained('key_b'); // a change that is not a move waits for nothing
  });
});
