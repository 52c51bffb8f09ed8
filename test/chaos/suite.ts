// One chaos suite: a gateway, every fault kind of the table as its own test (R runs of 8 calls in flight,
// then the ledger auditor), and the table printed and written to test/artifacts/ at the end. The full suite
// (faults.chaos.ts) and the fast subset in `npm test` (fast.test.ts) differ only in their number of runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertClean } from '../helpers/auditor.ts';
import { type ChaosGateway, startChaosGateway } from './chaos-gateway.ts';
import { CLIENT_FAULTS, VENDOR_FAULTS } from './faults.ts';
import { type FaultCase, runFault } from './harness.ts';
import { KNOWN_BUGS, KNOWN_INTERMITTENT_BUGS } from './known-bugs.ts';
import { ChaosTally } from './tally.ts';

export const CALLS_PER_RUN = 8;

/** The auditor's words for vendor work charged less than its price. */
const LOSS = /charged short|charged nothing/;

/** What a suite runs against: the in-process gateway by default; process faults bring their own (process-faults.ts). */
export type ChaosStarter = () => Promise<Pick<ChaosGateway, 'target' | 'database' | 'close'>>;

export interface ChaosSuiteOptions {
  title: string;
  file: string;
  runs: number;
  faults?: readonly FaultCase[];
  start?: ChaosStarter;
  /** Calls in flight per run (default CALLS_PER_RUN). */
  callsPerRun?: number;
  /** Time a run may take, for the test's time limit (default 5 s; a run that restarts a gateway takes longer). */
  msPerRun?: number;
}

export function defineChaosSuite(opts: ChaosSuiteOptions): void {
  const { runs } = opts;
  const callsPerRun = opts.callsPerRun ?? CALLS_PER_RUN;
  let g: Pick<ChaosGateway, 'target' | 'database' | 'close'>;
  const tally = new ChaosTally(opts.file, `${opts.title}: ${runs} runs of ${callsPerRun} calls in flight per fault`);
  beforeAll(async () => {
    g = await (opts.start ?? startChaosGateway)();
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    console.log(`\n${tally.write()}\n(database: ${g?.database}; written to test/artifacts/${opts.file})`);
  });

  describe(`${opts.title}: the auditor finds the ledger whole after every fault`, () => {
    for (const fc of opts.faults ?? [...VENDOR_FAULTS, ...CLIENT_FAULTS]) {
      const bug = KNOWN_BUGS[fc.name];
      const sometimes = KNOWN_INTERMITTENT_BUGS[fc.name];
      const mark = bug ? ` (known bug: ${bug})` : sometimes ? ` (known intermittent bug: ${sometimes.why})` : '';
      (bug ? it.fails : it)(
        `${fc.name}${mark}`,
        async () => {
          const { row, report } = await runFault(g.target, fc, runs, callsPerRun);
          tally.add(row);
          expect(row.calls).toBe(runs * callsPerRun);
          if (fc.inject) expect(row.faulted, 'the fault fired in every run').toBeGreaterThanOrEqual(runs);
          else if (!fc.client && !fc.during) expect(row.answered, 'a clean run answers every call').toBe(row.calls);
          // A process killed outright takes the charges it had not written with it: reported, bounded, not a fault.
          if (fc.lossBound) {
            const lost = report.problems.filter((p) => LOSS.test(p));
            expect(lost.length, `${fc.name}: more calls lost than its bound`).toBeLessThanOrEqual(fc.lossBound(runs * callsPerRun));
            report.problems = report.problems.filter((p) => !LOSS.test(p));
          }
          if (sometimes) {
            const known = report.problems.filter((p) => sometimes.problems.test(p));
            if (known.length)
              console.warn(
                `${fc.name}: ${known.length} problem(s) of a known intermittent bug, not failed:\n${known.map((p) => `  - ${p}`).join('\n')}`,
              );
            report.problems = report.problems.filter((p) => !sometimes.problems.test(p));
          }
          assertClean(report, fc.name);
        },
        60_000 + runs * (opts.msPerRun ?? 5_000),
      );
    }
  });
}
