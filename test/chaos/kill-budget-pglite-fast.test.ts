// Part of `npm test`: the gateway SIGKILLed under load on the embedded database (PGlite on a data folder), with expiring lots and a class's limits
// in the mix; a few runs (CHAOS_FAST_RUNS, default 2). The full variant is kill-budget-pglite.chaos.ts.
import { defineKillBudgetSuites } from './kill-budget.ts';

defineKillBudgetSuites('pglite', { fast: true, runs: Number(process.env.CHAOS_FAST_RUNS ?? 2) });
