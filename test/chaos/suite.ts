// One chaos suite: a gateway, every fault kind of the table as its own test (R runs of 8 calls in flight,
// then the ledger auditor), and the table printed and written to test/artifacts/ at the end. The full suite
// (faults.chaos.ts) and the fast subset in `npm test` (fast.test.ts) differ only in their number of runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertClean } from '../helpers/auditor.ts';
import { startChaosGateway, type ChaosGateway } from './chaos-gateway.ts';
import { CLIENT_FAULTS, VENDOR_FAULTS } from './faults.ts';
import { runFault, type FaultCase } from './harness.ts';
import { KNOWN_BUGS } from './known-bugs.ts';
import { ChaosTally } from './tally.ts';

export const CALLS_PER_RUN = 8;

export function defineChaosSuite(opts: { title: string; file: string; runs: number; faults?: readonly FaultCase[] }): void {
  const { runs } = opts;
  let g: ChaosGateway;
  const tally = new ChaosTally(opts.file, `${opts.title}: ${runs} runs of ${CALLS_PER_RUN} calls in flight per fault`);
  beforeAll(async () => {
    g = await startChaosGateway();
  }, 60_000);
  afterAll(async () => {
    await g?.close();
    console.log(`\n${tally.write()}\n(database: ${g?.database}; written to test/artifacts/${opts.file})`);
  });

  describe(`${opts.title}: the auditor finds the ledger whole after every fault`, () => {
    for (const fc of opts.faults ?? [...VENDOR_FAULTS, ...CLIENT_FAULTS]) {
      const bug = KNOWN_BUGS[fc.name];
      (bug ? it.fails : it)(`${fc.name}${bug ? ` (known bug: ${bug})` : ''}`, async () => {
        const { row, report } = await runFault(g.target, fc, runs, CALLS_PER_RUN);
        tally.add(row);
        expect(row.calls).toBe(runs * CALLS_PER_RUN);
        if (fc.inject) expect(row.faulted, 'the fault fired in every run').toBeGreaterThanOrEqual(runs);
        else if (!fc.client) expect(row.answered, 'a clean run answers every call').toBe(row.calls);
        assertClean(report, fc.name);
      }, 60_000 + runs * 5_000);
    }
  });
}
