// `npm run test:chaos`: every vendor and client fault again with budget leases off (every call holds its own
// reservation, as a wallet too small to lease does), CHAOS_RUNS runs (default 100), then the ledger auditor.
// The other fault files run the shipped config, leases on.
import { startChaosGateway } from './chaos-gateway.ts';
import { defineChaosSuite } from './suite.ts';

defineChaosSuite({
  title: 'Chaos suite, a hold per call (budget leases off)',
  file: 'chaos-per-call.md',
  runs: Number(process.env.CHAOS_RUNS ?? 100),
  start: () => startChaosGateway({ leases: false }),
});
