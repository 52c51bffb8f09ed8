// The targets that set one process against another (CPU per call, and what one connection adds to a call) read
// again in rounds at the end of the run: within a round the stub, the floor, the peer and the gateway take the same
// rows one after another, the order turning each round, so a machine that speeds up or slows down over the run
// moves both sides of a ratio alike. The targets read the median of the rounds' ratios (table.ts).
import { callRequests, type TargetKind } from './calls.ts';
import type { RowPlan, TargetName, Watched } from './measure.ts';

export interface RoundTarget {
  target: TargetName;
  kind: TargetKind;
  url: string;
  watched: Watched;
  /** The gateway's hot key; absent for the targets that take no key. */
  keys?: string[] | undefined;
}

interface RoundsPlan {
  rounds: number;
  seconds: number;
  stubUrl: string;
  record: (plan: RowPlan, watched: Watched) => Promise<void>;
}

/** Vendor B chat at 32 and at 1 connection, on each target in turn, `rounds` times. */
export async function runRounds(targets: readonly RoundTarget[], plan: RoundsPlan): Promise<void> {
  for (let round = 1; round <= plan.rounds; round++) {
    const turn = (round - 1) % targets.length;
    for (const t of [...targets.slice(turn), ...targets.slice(0, turn)]) {
      const requests = callRequests(t.kind, 'chat-b', false, { stubUrl: plan.stubUrl, keys: t.keys });
      for (const connections of [32, 1]) {
        const wallet = t.keys ? 'hot' : 'none';
        await plan.record(
          { target: t.target, what: 'chat-b', stream: false, wallet, url: t.url, requests, connections, seconds: plan.seconds, round },
          t.watched,
        );
      }
    }
  }
}
