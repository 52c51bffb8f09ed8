// A prepared call as relayStream sees it, for tests that drive the relay with a translator of their own: the
// door's chain names the translator `test`, and its wire format reports no stream failure.

import type { PreparedCall, TransformRegistry } from '../../engine/calls/prepare.ts';
import type { Call, StreamTranslatorFactory } from '../../engine/core/call.ts';
import { chatErrors } from '../../transforms/protocols/vendor-errors.ts';

export function preparedStream(translator: StreamTranslatorFactory): { registry: TransformRegistry; prepared: PreparedCall } {
  const registry = { streamTranslators: { test: translator } } as unknown as TransformRegistry;
  const prepared = {
    call: {} as Call,
    protocol: { stream: 'test' },
    protocolName: 'test',
    wire: { errors: chatErrors, limits: {}, modelFields: [{ field: 'model' }] },
  } as unknown as PreparedCall;
  return { registry, prepared };
}
