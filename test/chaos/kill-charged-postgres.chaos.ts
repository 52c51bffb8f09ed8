// `npm run test:chaos`: the gateway SIGKILLed under load on PostgreSQL,
// every answer received in full must be charged; leases on and off (KILL_LEASES=on,off), CHAOS_RUNS runs
// (default 100) of 16 calls each. Calls that broke the promise: test/artifacts/kill-charged-postgres-leases-*.md.
import { defineKillChargedSuites } from './kill-charged.ts';

defineKillChargedSuites('postgres', { fast: false, runs: Number(process.env.CHAOS_RUNS ?? 100) });
