// The vendor wire formats config/doors.yaml may name (a key of a door's `protocols`, or its `speaks`). One file
// per format family; this file only names them. Adding a format: docs/architecture.md "Where to go".
import type { Protocol } from '../../engine/core/protocol.ts';
import { chatCompletions } from './chat-completions.ts';
import { embeddings, images, moderations, speech, videoJobs } from './media.ts';
import { messages } from './messages.ts';
import { responses } from './responses.ts';

export const protocols: Record<string, Protocol> = {
  messages,
  'chat-completions': chatCompletions,
  responses,
  images,
  embeddings,
  speech,
  moderations,
  'video-jobs': videoJobs,
};
