// The media formats of vendors B and D: images, embeddings, speech, moderations and video jobs. Each answers whole
// (no stream), writes chat-family errors, and has no field that lowers a hold: its door's billing decides the charge.
import type { PromptFields } from '../../../engine/core/prompt-fields.ts';
import type { Chain, Protocol } from '../../../engine/core/protocol.ts';
import type { Transcript } from '../../../engine/core/transcript.ts';
import { answerHasList } from '../../steps/answer-has-list.ts';
import { modelRules } from '../../steps/model-rules.ts';
import { conversation, neverEnds, stated } from '../../util/transcript.ts';
import { chatErrors } from '../../util/vendor-errors.ts';
import { countCharacters } from './count-characters.ts';
import { embeddingInput } from './embedding-input.ts';
import { embeddingsUsage } from './embeddings-usage.ts';
import { imageUsage } from './image-usage.ts';
import { statedImageCount } from './stated-image-count.ts';

/**
 * What the client asks for is the text (or texts, or token ids) in one field, `asked`; an answer is media or
 * figures, not a turn of conversation, and states no finish reason.
 */
const askedIn = (asked: string): Transcript => ({
  input: (body) => conversation(undefined, body[asked]),
  output: () => [],
  facts: (json) => stated(json),
  mayEnd: neverEnds,
});

const wholeAnswer = (asked: string, chains: Record<string, Chain>, prompt?: PromptFields): Protocol => ({
  errors: chatErrors,
  limits: {},
  modelFields: [{ field: 'model' }],
  ...(prompt ? { prompt } : {}),
  transcript: askedIn(asked),
  chains,
});

const GENERATIONS = '/v1/images/generations';
/** An image answer holds its images: a `data` list with at least one entry. */
const imagesPresent = answerHasList({
  name: 'images-present',
  field: 'data',
  least: 1,
  lacking: 'the vendor answered an image request without images (no data list)',
});

export const images = wholeAnswer('prompt', {
  images: { upstream: GENERATIONS, request: [modelRules], check: imagesPresent, usage: imageUsage },
  'image-edits': { upstream: '/v1/images/edits', request: [], check: imagesPresent, usage: imageUsage },
});

/** The images format as vendor D takes a generation: model, prompt and the count of images, always stated. */
export const imagesWithCount = wholeAnswer('prompt', {
  images: { upstream: GENERATIONS, request: [modelRules, statedImageCount], check: imagesPresent, usage: imageUsage },
});

// Embeddings are billed by tokens: each entry of `input` (or the one string) is a text the model reads, framed apart.
export const embeddings = wholeAnswer(
  'input',
  { embeddings: { upstream: '/v1/embeddings', request: [embeddingInput], usage: embeddingsUsage } },
  { turns: ['input'] },
);
export const speech = wholeAnswer('input', { speech: { upstream: '/v1/audio/speech', request: [countCharacters] } });
export const moderations = wholeAnswer('input', { moderations: { upstream: '/v1/moderations', request: [] } });
export const videoJobs = wholeAnswer('prompt', { videos: { upstream: '/v1/videos/generations', request: [] } });
