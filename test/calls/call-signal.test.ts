// The call's abort source (engine/calls/call-signal.ts) and its time limit (deadline.ts).
import { describe, expect, it } from 'vitest';
import { CallAbort, onAbort } from '../../engine/calls/call-signal.ts';
import { startDeadline } from '../../engine/calls/deadline.ts';

describe('CallAbort', () => {
  it('fires once, keeps the first reason, and tells listeners added after it fired at once', () => {
    const a = new CallAbort();
    const heard: unknown[] = [];
    onAbort(a, () => heard.push(a.reason));
    a.abort('first');
    a.abort('second');
    expect(heard).toEqual(['first']);
    expect(a.aborted).toBe(true);
    expect(a.reason).toBe('first');
    expect(a.listenerCount('abort')).toBe(0);
    onAbort(a, () => heard.push('late'));
    expect(heard).toEqual(['first', 'late']);
  });

  it('forgets a listener when asked, leaving nothing registered', () => {
    const a = new CallAbort();
    let heard = 0;
    const forget = onAbort(a, () => heard++);
    forget();
    a.abort();
    expect(heard).toBe(0);
    expect(a.listenerCount('abort')).toBe(0);
  });
});

describe('startDeadline', () => {
  it('fires with a TimeoutError when its time passes, and says so', async () => {
    const d = startDeadline(10);
    await new Promise((r) => d.signal.once('abort', () => r(undefined)));
    expect(d.passed).toBe(true);
    expect(d.signal.reason).toMatchObject({ name: 'TimeoutError' });
    d.end();
  });

  it('fires with the parent reason when the parent fires first, and ending it unhooks it from the parent', () => {
    const parent = new CallAbort();
    const d = startDeadline(60_000, parent);
    expect(parent.listenerCount('abort')).toBe(1);
    parent.abort('client left');
    expect(d.signal.aborted).toBe(true);
    expect(d.passed).toBe(false);
    expect(d.signal.reason).toBe('client left');
    d.end();

    const parent2 = new CallAbort();
    const d2 = startDeadline(60_000, parent2);
    d2.end();
    expect(parent2.listenerCount('abort')).toBe(0);
    parent2.abort('late');
    expect(d2.signal.aborted).toBe(false);
  });
});
