// Every step the formats' chains run (transforms/protocols/<format>/), by the name the chains give it: for tests
// that exercise one transform by name. Read off the formats, never registered into.
import type { AnswerTransform, RequestTransform, StreamTranslatorFactory, UsageReader } from '../../engine/core/call.ts';
import type { Chain, Step } from '../../engine/core/protocol.ts';
import { protocols } from '../../transforms/protocols/index.ts';

/** Every chain of every format, labelled `<format>/<door>`. */
export const everyChain = (): [string, Chain][] =>
  Object.entries(protocols).flatMap(([format, p]) =>
    Object.entries(p.chains).map(([door, c]): [string, Chain] => [`${format}/${door}`, c]),
  );

function byName<F>(steps: (c: Chain) => (Step<F> | undefined)[]): Record<string, F> {
  const out: Record<string, F> = {};
  for (const [, chain] of everyChain()) for (const s of steps(chain)) if (s) out[s.name] = s.run;
  return out;
}

export const requestTransforms: Record<string, RequestTransform> = byName((c) => c.request);
export const answerTransforms: Record<string, AnswerTransform> = byName((c) => [c.answer]);
export const streamTranslators: Record<string, StreamTranslatorFactory> = byName((c) => [c.stream]);
export const usageReaders: Record<string, UsageReader> = byName((c) => [c.usage]);
