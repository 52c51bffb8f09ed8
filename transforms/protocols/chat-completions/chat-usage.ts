// Chat-completions usage (vendors B–E on the chat door) → the four buckets, read as transforms/util/usage-figures.ts
// reads the chat family's figure.
import type { UsageReader } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { normaliseChatUsage } from '../../util/usage-figures.ts';

/** The step as chains name it. */
export const chatUsage: Step<UsageReader> = { name: 'chat-usage', run: (answer) => normaliseChatUsage(answer.usage) };
