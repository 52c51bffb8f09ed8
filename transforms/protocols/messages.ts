// Vendor A's native messages format (/v1/messages), reached from the messages door as it is and from the chat
// door through the translation chain in config/doors.yaml.
import type { Protocol } from '../../engine/core/protocol.ts';
import { eventObject, messagesErrors } from './vendor-errors.ts';

export const messages: Protocol = {
  errors: messagesErrors,
  // `event: error` carries `{type: 'error', error: {…}}`; a relay that drops the event name still shows the type.
  isStreamError: (event) => event.event === 'error' || eventObject(event)?.type === 'error',
  limits: {
    output: ['max_tokens'],
    tool_uses: 'max_uses',
    // `context_management.edits: [{type: 'compact_…'}]` summarises the transcript in passes of its own.
    compaction: { field: 'context_management', list: 'edits', type_prefix: 'compact' },
  },
  // The advisor tool runs the model it names over the whole transcript.
  modelFields: [{ field: 'model' }, { in: 'tools', field: 'model' }],
  needs: {
    request: ['cap-server-tools'],
    why: 'the vendor runs server tools as often as it decides unless the body caps them',
  },
};
