// The named transforms config/doors.yaml refers to. One file per transform; this file only names them.
import type { AnswerTransform, RequestTransform, StreamTranslatorFactory, UsageReader } from '../engine/core/call.ts';

export { protocols } from './protocols/index.ts';

import { messagesToChat } from './answer/messages-to-chat.ts';
import { askStreamUsage } from './request/ask-stream-usage.ts';
import { capOutput } from './request/cap-output.ts';
import { capServerTools } from './request/cap-server-tools.ts';
import { carryCacheControl } from './request/carry-cache-control.ts';
import { chatParamsToNative } from './request/chat-params-to-native.ts';
import { countCharacters } from './request/count-characters.ts';
import { defaultMaxTokens } from './request/default-max-tokens.ts';
import { effortToNative } from './request/effort-to-native.ts';
import { messagesToBlocks } from './request/messages-to-blocks.ts';
import { modelRules } from './request/model-rules.ts';
import { statedImageCount } from './request/stated-image-count.ts';
import { stopToSequences } from './request/stop-to-sequences.ts';
import { systemToField } from './request/system-to-field.ts';
import { toolChoiceToNative } from './request/tool-choice-to-native.ts';
import { toolsToNative } from './request/tools-to-native.ts';
import { messageEventsToChatChunks } from './stream/message-events-to-chat-chunks.ts';
import { relayHidingInjectedUsage } from './stream/relay-hiding-injected-usage.ts';
import { relayMessages } from './stream/relay-messages.ts';
import { relayResponses } from './stream/relay-responses.ts';
import { chatUsage, embeddingsUsage } from './usage/chat-usage.ts';
import { imageUsage } from './usage/image-usage.ts';
import { messagesUsage } from './usage/messages-usage.ts';
import { responsesUsage } from './usage/responses-usage.ts';

export const requestTransforms: Record<string, RequestTransform> = {
  'system-to-field': systemToField,
  'messages-to-blocks': messagesToBlocks,
  'tools-to-native': toolsToNative,
  'tool-choice-to-native': toolChoiceToNative,
  'stop-to-sequences': stopToSequences,
  'default-max-tokens': defaultMaxTokens,
  'effort-to-native': effortToNative,
  'model-rules': modelRules,
  'carry-cache-control': carryCacheControl,
  'chat-params-to-native': chatParamsToNative,
  'ask-stream-usage': askStreamUsage,
  'count-characters': countCharacters,
  'cap-server-tools': capServerTools,
  'cap-output': capOutput,
  'stated-image-count': statedImageCount,
};

export const answerTransforms: Record<string, AnswerTransform> = {
  'messages-to-chat': messagesToChat,
};

export const streamTranslators: Record<string, StreamTranslatorFactory> = {
  'message-events-to-chat-chunks': messageEventsToChatChunks,
  'relay-hiding-injected-usage': relayHidingInjectedUsage,
  'relay-responses': relayResponses,
  'relay-messages': relayMessages,
};

export const usageReaders: Record<string, UsageReader> = {
  'messages-usage': messagesUsage,
  'chat-usage': chatUsage,
  'embeddings-usage': embeddingsUsage,
  'responses-usage': responsesUsage,
  'image-usage': imageUsage,
};
