// The fast subset of the chaos suite, part of `npm test`: every fault kind, a few runs (CHAOS_FAST_RUNS,
// default 2) of 8 calls in flight, then the ledger auditor. `npm run test:chaos` runs the full one.
import { defineChaosSuite } from './suite.ts';

defineChaosSuite({ title: 'Chaos, fast subset', file: 'chaos-fast.md', runs: Number(process.env.CHAOS_FAST_RUNS ?? 2) });
