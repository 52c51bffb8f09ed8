// The catalog checks and config/billing.yaml know a step by its name: one name is one transform in every chain.
import { describe, expect, it } from 'vitest';
import type { Step } from '../../engine/core/protocol.ts';
import { everyChain } from '../helpers/chain-steps.ts';

describe('the steps of the formats’ chains', () => {
  it('give one name to one transform, whichever chain runs it', () => {
    const seen = new Map<string, unknown>();
    const clashes: string[] = [];
    for (const [where, chain] of everyChain()) {
      const steps: (Step<unknown> | undefined)[] = [...chain.request, chain.check, chain.answer, chain.stream, chain.usage];
      for (const s of steps) {
        if (!s) continue;
        if (seen.has(s.name) && seen.get(s.name) !== s.run) clashes.push(`${where}: ${s.name}`);
        seen.set(s.name, s.run);
      }
    }
    expect(clashes).toEqual([]);
  });
});
