// A whole answer is usable only when it holds the list its door answers with, each entry an object. A vendor that
// answered another endpoint's body (a chat completion to an image request, an error object sent with status 200,
// `choices: [null]`) or said with status 200 that it failed did not do the work asked: its route has failed
// (engine/calls/exchange.ts), rather than the client getting a 200 without an answer, charged by estimate.
import type { AnswerCheck } from '../../engine/core/call.ts';
import type { Step } from '../../engine/core/protocol.ts';
import { isJsonObject, type JsonValue } from '../../engine/core/types.ts';

interface ListRule {
  /** The step's name, as chains and traces show it. */
  name: string;
  field: string;
  /** The fewest entries a usable answer has. */
  least: number;
  /** What the answer lacked, said as the route's failure. */
  lacking: string;
  /** A field each entry carries as an object (a chat choice's `message`). */
  entryHas?: string;
  /** A top-level field's value that says the work failed, though the status was 200 (a response `failed`). */
  failed?: { field: string; value: string };
}

export function answerHasList(rule: ListRule): Step<AnswerCheck> {
  const usable = (entry: JsonValue) => isJsonObject(entry) && (rule.entryHas === undefined || isJsonObject(entry[rule.entryHas]));
  const run: AnswerCheck = (answer) => {
    if (rule.failed && answer[rule.failed.field] === rule.failed.value)
      return `the vendor answered ${rule.failed.field} '${rule.failed.value}'`;
    const list = answer[rule.field];
    return Array.isArray(list) && list.length >= rule.least && list.every(usable) ? null : rule.lacking;
  };
  return { name: rule.name, run };
}
