// The vendor wire formats config/doors.yaml may name in a door's `vendor_protocol`. One folder per format family
// (its facts, its translation steps and the chain each door runs to reach it); this file only names them.
// Adding a format: docs/architecture.md "Where to go".
import type { Protocol } from '../../engine/core/protocol.ts';
import { chatCompletions } from './chat-completions/index.ts';
import { embeddings, images, imagesWithCount, moderations, speech, videoJobs } from './media/index.ts';
import { messages } from './messages/index.ts';
import { responses } from './responses/index.ts';

export const protocols: Record<string, Protocol> = {
  messages,
  'chat-completions': chatCompletions,
  responses,
  images,
  'images-with-count': imagesWithCount,
  embeddings,
  speech,
  moderations,
  'video-jobs': videoJobs,
};
