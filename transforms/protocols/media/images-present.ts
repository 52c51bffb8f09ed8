// Image doors: an answer is usable only with its images, a `data` list with at least one entry. A vendor that
// answered another endpoint's body (a chat completion) made no image, and charging for it at 0 would still hand
// the client a 200 without one: its route has failed instead (engine/calls/exchange.ts).
import type { AnswerCheck } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';

const run: AnswerCheck = (answer) =>
  Array.isArray(answer.data) && answer.data.length > 0 ? null : 'the vendor answered an image request without images (no data list)';

/** The step as chains name it. */
export const imagesPresent: Step<AnswerCheck> = { name: 'images-present', run };
