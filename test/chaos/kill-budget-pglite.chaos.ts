// `npm run test:chaos`: the gateway SIGKILLed under load on the embedded database (PGlite on a data folder), with expiring lots and a class's limits
// in the mix; CHAOS_RUNS runs (default 100) of 16 calls each. Calls that broke the promise: test/artifacts/kill-budget-pglite.md.
import { defineKillBudgetSuites } from './kill-budget.ts';

defineKillBudgetSuites('pglite', { fast: false, runs: Number(process.env.CHAOS_RUNS ?? 100) });
