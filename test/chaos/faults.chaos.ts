// The full chaos suite over vendor and client faults (`npm run test:chaos`): CHAOS_RUNS runs (default 100) of
// 8 calls in flight per fault kind, then the ledger auditor. The table goes to stdout and to
// test/artifacts/chaos-results.md, for the README's reliability section.
import { defineChaosSuite } from './suite.ts';

defineChaosSuite({ title: 'Chaos suite', file: 'chaos-results.md', runs: Number(process.env.CHAOS_RUNS ?? 100) });
