// The embeddings door's usage: the chat family's figure without a completion count (an embedding generates no
// tokens), read as transforms/util/usage-figures.ts reads it.
import type { UsageReader } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import { normaliseChatUsage } from '../../util/usage-figures.ts';

/** The step as chains name it. */
export const embeddingsUsage: Step<UsageReader> = { name: 'embeddings-usage', run: (answer) => normaliseChatUsage(answer.usage, false) };
