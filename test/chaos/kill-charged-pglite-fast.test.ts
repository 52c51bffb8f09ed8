// Part of `npm test`: the gateway SIGKILLed under load on the embedded database (PGlite on a data folder),
// every answer received in full must be charged; leases on and off (KILL_LEASES=on,off), a few runs
// (CHAOS_FAST_RUNS, default 2). The full variant is kill-charged-pglite.chaos.ts.
import { defineKillChargedSuites } from './kill-charged.ts';

defineKillChargedSuites('pglite', { fast: true, runs: Number(process.env.CHAOS_FAST_RUNS ?? 2) });
