// The media formats of vendors B and D: images, embeddings, speech, moderations and video jobs. Each answers whole
// (no stream), writes chat-family errors, and has no field that lowers a hold: its door's billing decides the charge.
import type { Protocol } from '../../engine/core/protocol.ts';
import { chatErrors } from './vendor-errors.ts';

const wholeAnswer = (): Protocol => ({ errors: chatErrors, limits: {}, modelFields: [{ field: 'model' }] });

export const images = wholeAnswer();
export const embeddings = wholeAnswer();
export const speech = wholeAnswer();
export const moderations = wholeAnswer();
export const videoJobs = wholeAnswer();
