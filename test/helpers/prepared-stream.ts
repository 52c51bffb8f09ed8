// A prepared call as relayStream sees it, for tests that drive the relay with a translator of their own: the
// door's chain runs the translator as its stream step, and its wire format reports no stream failure.

import type { PreparedCall } from '../../engine/calls/prepare.ts';
import type { Call, StreamTranslatorFactory } from '../../engine/core/call.ts';
import { chatErrors } from '../../transforms/util/vendor-errors.ts';

export function preparedStream(translator: StreamTranslatorFactory): { prepared: PreparedCall } {
  const prepared = {
    call: {} as Call,
    protocol: { upstream: '/test', request: [], stream: { name: 'test', run: translator } },
    protocolName: 'test',
    wire: { errors: chatErrors, limits: {}, modelFields: [{ field: 'model' }] },
  } as unknown as PreparedCall;
  return { prepared };
}
