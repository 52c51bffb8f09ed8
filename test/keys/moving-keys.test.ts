// The mark of a key being moved, in one process (engine/keys/moving-keys.ts): what it refuses, what ends it, and
// the wait for the key's admissions under way.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MovingKeys, moveMarks } from '../../engine/keys/moving-keys.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('MovingKeys', () => {
  it("refuses the moving key's calls with a 429 to retry, and only that key's, until the move's end is applied", () => {
    const moving = new MovingKeys();
    const move = moveMarks('key_a');
    moving.apply(move.start);
    expect(() => moving.begin('key_a')).toThrow(expect.objectContaining({ status: 429, headers: { 'retry-after': '1' } }));
    moving.begin('key_b')();
    for (const other of ['key_a', 'wallet:w1', '*']) moving.apply(other); // other changes of the key do not end it
    expect(() => moving.begin('key_a')).toThrow(/being moved/);
    moving.apply(move.end);
    moving.begin('key_a')();
  });

  it('two moves of one key at once: the key stays marked until both end', () => {
    // Found by an attack: the first move's end took the second's mark off, and the key's calls were admitted under
    // the class it was leaving while the second move was decided (a class of 1,000 credits at 30,000).
    const moving = new MovingKeys();
    const [first, second] = [moveMarks('key_a'), moveMarks('key_a')];
    moving.apply(first.start);
    moving.apply(second.start);
    moving.apply(first.end);
    expect(() => moving.begin('key_a')).toThrow(/being moved/);
    moving.apply(second.end);
    moving.begin('key_a')();
  });

  it('refuses a call of a key read before its move, whose class may have changed since', () => {
    // Found by an attack: a call read the key (its old class) just before the move committed and was admitted once
    // the mark was off, under the old class's limits, then charged to the new class.
    const moving = new MovingKeys();
    const readBefore = moving.seen();
    const move = moveMarks('key_a');
    moving.apply(move.start);
    moving.apply(move.end);
    expect(() => moving.begin('key_a', readBefore)).toThrow(/being moved/);
    moving.begin('key_b', readBefore)(); // another key's reading is not stale
    moving.begin('key_a', moving.seen())();
  });

  it('lapses when the end of the move is never heard', () => {
    vi.useFakeTimers();
    const moving = new MovingKeys();
    moving.apply(moveMarks('key_a').start);
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
    const wait = moving.drained(moveMarks('key_a').start).then(() => {
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
