// Part of `npm test`: the gateway SIGKILLed under load on PostgreSQL,
// every answer received in full must be charged; leases on and off (KILL_LEASES=on,off), a few runs
// (CHAOS_FAST_RUNS, default 2). The full variant is kill-charged-postgres.chaos.ts.
import { defineKillChargedSuites } from './kill-charged.ts';

defineKillChargedSuites('postgres', { fast: true, runs: Number(process.env.CHAOS_FAST_RUNS ?? 2) });
