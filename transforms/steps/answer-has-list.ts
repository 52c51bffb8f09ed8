// A whole answer is usable only when it holds the list its door answers with. A vendor that answered another
// endpoint's body (a chat completion to an image request, an error object sent with status 200) did not do the
// work asked: its route has failed (engine/calls/exchange.ts), rather than the client getting a 200 without an
// answer, charged by estimate.
import type { AnswerCheck } from '../../engine/core/call.ts';
import type { Step } from '../../engine/core/protocol.ts';

interface ListRule {
  /** The step's name, as chains and traces show it. */
  name: string;
  field: string;
  /** The fewest entries a usable answer has. */
  least: number;
  /** What the answer lacked, said as the route's failure. */
  lacking: string;
}

export function answerHasList(rule: ListRule): Step<AnswerCheck> {
  const run: AnswerCheck = (answer) => {
    const list = answer[rule.field];
    return Array.isArray(list) && list.length >= rule.least ? null : rule.lacking;
  };
  return { name: rule.name, run };
}
