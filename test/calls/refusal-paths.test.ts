// A refusal's `param` path may step into each entry of a list with `*` (config/doors.yaml): the condition holds
// when it holds at one entry, names that entry, and never holds where the list is absent.
import { describe, expect, it } from 'vitest';
import { firstRefusal } from '../../engine/calls/refusals.ts';
import type { Condition, Refusal } from '../../engine/core/call.ts';
import type { JsonObject } from '../../engine/core/types.ts';

const refusal = (when: Condition): Refusal => ({ when, say: '{at} holds {value}.', status: 400 });
const hit = (when: Condition, body: JsonObject) => {
  const found = firstRefusal([refusal(when)], { body, headers: {} });
  return found && { message: found.message, param: found.param };
};

const body: JsonObject = {
  messages: [
    { role: 'user', content: 'a string has no entries' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'file', file: { file_id: 'file-1' } },
      ],
    },
  ],
};

describe('`*` steps in a refusal param', () => {
  it('holds at the first entry where the condition does, naming it with its indexes', () => {
    expect(hit({ param: 'messages.*.content.*.file.file_id', not_in: [null] }, body)).toEqual({
      message: 'messages[1].content[1].file.file_id holds "file-1".',
      param: 'messages[1].content[1].file.file_id',
    });
    expect(hit({ param: 'messages.*.content.*.type', equals: 'text' }, body)?.param).toBe('messages[1].content[0].type');
  });

  it('holds nowhere when no entry meets it, or the list is absent or not a list', () => {
    expect(hit({ param: 'messages.*.content.*.file.file_id', equals: 'file-2' }, body)).toBeUndefined();
    expect(hit({ param: 'input.*.file_id', present: true }, body)).toBeUndefined();
    expect(hit({ param: 'messages.*.content.*.file_id', present: false }, { messages: 'hi' })).toBeUndefined();
    expect(
      hit({ param: 'messages.*.content.*.file.file_id', not_in: [null] }, { messages: [{ content: [{ file: { file_id: null } }] }] }),
    ).toBeUndefined();
  });

  it('leaves a path without `*` as it was: its param as written, a numeric step one entry', () => {
    expect(hit({ param: 'messages.1.role', equals: 'user' }, body)?.param).toBe('messages.1.role');
    expect(hit({ param: 'prompt.id', present: false }, body)?.param).toBe('prompt.id');
  });
});
