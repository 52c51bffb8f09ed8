// Part of `npm test`: the gateway SIGKILLed under load on PostgreSQL, two gateways on one wallet, the first SIGKILLed, with expiring lots and a class's limits
// in the mix; a few runs (CHAOS_FAST_RUNS, default 2). The full variant is kill-budget-postgres.chaos.ts.
import { defineKillBudgetSuites } from './kill-budget.ts';

defineKillBudgetSuites('postgres', { fast: true, runs: Number(process.env.CHAOS_FAST_RUNS ?? 2) });
