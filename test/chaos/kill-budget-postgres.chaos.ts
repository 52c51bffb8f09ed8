// `npm run test:chaos`: the gateway SIGKILLed under load on PostgreSQL, two gateways on one wallet, the first SIGKILLed, with expiring lots and a class's limits
// in the mix; CHAOS_RUNS runs (default 100) of 16 calls each. Calls that broke the promise: test/artifacts/kill-budget-postgres.md.
import { defineKillBudgetSuites } from './kill-budget.ts';

defineKillBudgetSuites('postgres', { fast: false, runs: Number(process.env.CHAOS_RUNS ?? 100) });
