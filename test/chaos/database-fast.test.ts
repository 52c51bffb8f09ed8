// Part of `npm test`: PostgreSQL restarted under load, a few runs (CHAOS_FAST_RUNS, default 2), then the auditor.
import { postgresRestartSuite } from './process-faults.ts';
import { defineChaosSuite } from './suite.ts';

defineChaosSuite({
  title: 'Chaos, database, fast',
  file: 'chaos-database-fast.md',
  runs: Number(process.env.CHAOS_FAST_RUNS ?? 2),
  ...postgresRestartSuite(),
});
