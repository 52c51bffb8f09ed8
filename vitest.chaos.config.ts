// `npm run test:chaos`: the full fault suite (≥100 runs per fault kind), apart from `npm test`, which runs
// its fast subset (test/chaos/fast.test.ts). One file at a time: the machine has two cores.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
