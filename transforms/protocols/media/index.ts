// The media formats of vendors B and D: images, embeddings, speech, moderations and video jobs. Each answers whole
// (no stream), writes chat-family errors, and has no field that lowers a hold: its door's billing decides the charge.
import type { PromptFields } from '../../../engine/core/prompt-fields.ts';
import type { Chain, Protocol } from '../../../engine/core/protocol.ts';
import { modelRules } from '../../steps/model-rules.ts';
import { chatErrors } from '../../util/vendor-errors.ts';
import { countCharacters } from './count-characters.ts';
import { embeddingsUsage } from './embeddings-usage.ts';
import { imageUsage } from './image-usage.ts';
import { imagesPresent } from './images-present.ts';
import { statedImageCount } from './stated-image-count.ts';

const wholeAnswer = (chains: Record<string, Chain>, prompt?: PromptFields): Protocol => ({
  errors: chatErrors,
  limits: {},
  modelFields: [{ field: 'model' }],
  ...(prompt ? { prompt } : {}),
  chains,
});

const GENERATIONS = '/v1/images/generations';

export const images = wholeAnswer({
  images: { upstream: GENERATIONS, request: [modelRules], check: imagesPresent, usage: imageUsage },
  'image-edits': { upstream: '/v1/images/edits', request: [], check: imagesPresent, usage: imageUsage },
});

/** The images format as vendor D takes a generation: model, prompt and the count of images, always stated. */
export const imagesWithCount = wholeAnswer({
  images: { upstream: GENERATIONS, request: [modelRules, statedImageCount], check: imagesPresent, usage: imageUsage },
});

// Embeddings are billed by tokens: each entry of `input` (or the one string) is a text the model reads, framed apart.
export const embeddings = wholeAnswer(
  { embeddings: { upstream: '/v1/embeddings', request: [], usage: embeddingsUsage } },
  { turns: ['input'] },
);
export const speech = wholeAnswer({ speech: { upstream: '/v1/audio/speech', request: [countCharacters] } });
export const moderations = wholeAnswer({ moderations: { upstream: '/v1/moderations', request: [] } });
export const videoJobs = wholeAnswer({ videos: { upstream: '/v1/videos/generations', request: [] } });
