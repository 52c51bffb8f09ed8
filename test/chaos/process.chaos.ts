// `npm run test:chaos`: the gateway SIGKILLed under load, CHAOS_RUNS runs (default 100), then the ledger auditor.
import { gatewayKillSuite } from './process-faults.ts';
import { defineChaosSuite } from './suite.ts';

defineChaosSuite({ title: 'Chaos, process', file: 'chaos-process.md', runs: Number(process.env.CHAOS_RUNS ?? 100), ...gatewayKillSuite() });
