// The shape every catalog has: the English catalog's keys, each a text. Its own file so ko.ts can import
// the type without importing the English values.
import type { en } from './en.ts';

export type MessageKey = keyof typeof en;
export type Messages = Record<MessageKey, string>;
