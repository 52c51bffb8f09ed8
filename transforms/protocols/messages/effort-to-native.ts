// Chat door → vendor A: reasoning_effort moves to the native effort setting `output_config.effort`.
//   - `none` (and the chat format's `minimal`, which is below `low` too) is lowered to `low`;
//   - a model whose catalog effort_levels is null gets no effort at all (the field is omitted entirely);
//   - a value the model does not accept is a 400 naming the accepted values;
//   - before settings.effortCarriedSince (Korean date) the old behaviour applies: the field is removed.
// The model's levels come from the catalog (call.model.effort_levels); no model id is tested here.
import type { RequestTransform } from '../../../engine/core/call.ts';
import { koreanDate } from '../../../engine/core/clock.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { bad, describe, isObject } from '../../util/json.ts';
import type { OutputConfig } from './request-bodies.ts';

const LOWERED: Record<string, string> = { none: 'low', minimal: 'low' };

const run: RequestTransform = (call) => {
  const body = call.body;
  const raw = body.reasoning_effort;
  delete body.reasoning_effort;
  if (raw === undefined || raw === null) return call;
  if (typeof raw !== 'string') throw bad(`reasoning_effort must be a string; got ${describe(raw)}.`, 'reasoning_effort');
  if (koreanDate(call.settings.now) < call.settings.effortCarriedSince) return call;
  const levels = call.model.effort_levels;
  if (levels === null || levels === undefined) return call;
  const effort = LOWERED[raw] ?? raw;
  if (!levels.includes(effort)) {
    const accepted = levels.includes('low') ? ['none', ...levels] : [...levels];
    throw bad(
      `reasoning_effort '${raw}' is not accepted by ${call.model.id}. Accepted values: ${accepted.join(', ')}` +
        (levels.includes('low') ? " ('none' is sent as 'low')." : '.'),
      'reasoning_effort',
    );
  }
  const config = isObject(body.output_config) ? body.output_config : {};
  const output: OutputConfig = { ...config, effort };
  body.output_config = output;
  return call;
};

/** The step as chains name it. */
export const effortToNative: Step<RequestTransform> = { name: 'effort-to-native', run };
