// Part of `npm test`: the gateway SIGKILLed under load, a few runs (CHAOS_FAST_RUNS, default 2), then the auditor.
import { gatewayKillSuite } from './process-faults.ts';
import { defineChaosSuite } from './suite.ts';

defineChaosSuite({
  title: 'Chaos, process, fast',
  file: 'chaos-process-fast.md',
  runs: Number(process.env.CHAOS_FAST_RUNS ?? 2),
  ...gatewayKillSuite(),
});
