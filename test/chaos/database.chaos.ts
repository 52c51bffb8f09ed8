// `npm run test:chaos`: PostgreSQL restarted under load, CHAOS_RUNS runs (default 100), then the ledger auditor.
import { postgresRestartSuite } from './process-faults.ts';
import { defineChaosSuite } from './suite.ts';

defineChaosSuite({
  title: 'Chaos, database',
  file: 'chaos-database.md',
  runs: Number(process.env.CHAOS_RUNS ?? 100),
  ...postgresRestartSuite(),
});
