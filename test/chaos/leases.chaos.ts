// `npm run test:chaos`: every vendor and client fault again with budget leases on (calls admitted in memory,
// charges written behind the reply as draws), CHAOS_RUNS runs (default 100), then the ledger auditor.
import { startChaosGateway } from './chaos-gateway.ts';
import { defineChaosSuite } from './suite.ts';

defineChaosSuite({
  title: 'Chaos suite, budget leases on',
  file: 'chaos-leases.md',
  runs: Number(process.env.CHAOS_RUNS ?? 100),
  start: () => startChaosGateway({ leases: true }),
});
