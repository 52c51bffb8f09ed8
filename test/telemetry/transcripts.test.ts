// What a span records of a call, as each wire format declares it (transforms/protocols/<format>/transcript.ts): the
// answer's id, model and why it stopped, from a whole answer or event by event; and, only when captured, the
// messages in the conventions' {role, parts} shape.
import { describe, expect, it } from 'vitest';
import type { AnswerFacts, Transcript } from '../../engine/core/transcript.ts';
import { gatherEventFacts, gatherFacts, noFacts } from '../../engine/telemetry/answer-facts.ts';
import { chatTranscript } from '../../transforms/protocols/chat-completions/transcript.ts';
import { embeddings, images } from '../../transforms/protocols/media/index.ts';
import { messagesTranscript } from '../../transforms/protocols/messages/transcript.ts';
import { responsesTranscript } from '../../transforms/protocols/responses/transcript.ts';

const events = (format: Transcript, lines: object[]) =>
  lines.reduce<AnswerFacts>((f, e) => gatherEventFacts(f, JSON.stringify(e), format), noFacts());

describe('answer facts', () => {
  it('reads whole answers of chat completions, messages and responses, each in its own format', () => {
    const chat = { id: 'chatcmpl-1', model: 'b-5-2026', choices: [{ index: 0, finish_reason: 'length' }] };
    expect(gatherFacts(noFacts(), chat, chatTranscript)).toEqual({ id: 'chatcmpl-1', model: 'b-5-2026', finishReasons: ['length'] });
    const message = { id: 'msg_1', type: 'message', model: 'a-top', stop_reason: 'tool_use' };
    expect(gatherFacts(noFacts(), message, messagesTranscript)).toEqual({ id: 'msg_1', model: 'a-top', finishReasons: ['tool_use'] });
    const response = { id: 'resp_1', object: 'response', model: 'b-pro', status: 'incomplete' };
    expect(gatherFacts(noFacts(), response, responsesTranscript)).toEqual({ id: 'resp_1', model: 'b-pro', finishReasons: ['incomplete'] });
    // A format reads its own fields only: a messages answer read as chat completions states no reason.
    expect(gatherFacts(noFacts(), message, chatTranscript).finishReasons).toEqual([]);
    expect(gatherFacts(noFacts(), { id: 'e1', object: 'list', model: 'embedding-c-2', data: [] }, embeddings.transcript)).toEqual({
      id: 'e1',
      model: 'embedding-c-2',
      finishReasons: [],
    });
  });

  it('reads streams: the id from the opening event, the reason from the one that ends it, never a null reason', () => {
    const chat = events(chatTranscript, [
      { id: 'chatcmpl-2', model: 'b-5', choices: [{ delta: { content: 'hi' }, finish_reason: null }] },
      { id: 'chatcmpl-2', model: 'b-5', choices: [{ delta: {}, finish_reason: 'stop' }] },
    ]);
    expect(chat).toEqual({ id: 'chatcmpl-2', model: 'b-5', finishReasons: ['stop'] });
    const messages = events(messagesTranscript, [
      { type: 'message_start', message: { id: 'msg_2', model: 'a-top', stop_reason: null } },
      { type: 'content_block_delta', delta: { type: 'text_delta', text: 'x' } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' } },
    ]);
    expect(messages).toEqual({ id: 'msg_2', model: 'a-top', finishReasons: ['end_turn'] });
    const responses = events(responsesTranscript, [
      { type: 'response.created', response: { id: 'resp_2', model: 'b-5', status: 'in_progress' } },
      { type: 'response.output_item.added', item: { type: 'message', status: 'in_progress' } },
      { type: 'response.output_item.done', item: { id: 'msg_9', type: 'message', status: 'completed' } },
      { type: 'response.completed', response: { id: 'resp_2', model: 'b-5', status: 'completed' } },
    ]);
    expect(responses).toEqual({ id: 'resp_2', model: 'b-5', finishReasons: ['completed'] });
  });

  it('skips data that is not JSON, and parses no event after the id unless it may state an end', () => {
    expect(gatherEventFacts(noFacts(), '[DONE]', chatTranscript)).toEqual(noFacts());
    expect(gatherEventFacts(noFacts(), '{"choices":[{"finish_reason":"stop"}', chatTranscript)).toEqual(noFacts());
    const format: Transcript = { ...chatTranscript, facts: () => ({ finishReasons: ['read'] }), mayEnd: () => false };
    expect(gatherEventFacts({ id: 'x', finishReasons: [] }, '{"choices":[]}', format).finishReasons).toEqual([]);
    expect(gatherEventFacts(noFacts(), '{"choices":[]}', format).finishReasons).toEqual(['read']);
  });
});

describe('captured content', () => {
  it('gives the system text first, then each turn, with text parts kept as text', () => {
    const input = messagesTranscript.input({
      system: 'Be brief.',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image', source: { type: 'url', url: 'https://x' } },
          ],
        },
        { role: 'assistant', content: 'A cat.' },
      ],
    });
    expect(input).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] },
      {
        role: 'user',
        parts: [
          { type: 'text', content: 'What is this?' },
          { type: 'image', content: { type: 'image', source: { type: 'url', url: 'https://x' } } },
        ],
      },
      { role: 'assistant', parts: [{ type: 'text', content: 'A cat.' }] },
    ]);
    expect(responsesTranscript.input({ instructions: 'Be kind.', input: 'hello' })).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'Be kind.' }] },
      { role: 'user', parts: [{ type: 'text', content: 'hello' }] },
    ]);
    expect(chatTranscript.input({ messages: [{ role: 'system', content: 'Hi.' }] })).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'Hi.' }] },
    ]);
  });

  it('reads a media door by the field that holds what is asked: an image prompt, embeddings texts or token ids', () => {
    expect(images.transcript.input({ model: 'img', prompt: 'a red fox' })).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'a red fox' }] },
    ]);
    expect(embeddings.transcript.input({ input: [[101, 2023], 'two'] })).toEqual([
      { role: 'user', parts: [{ type: 'token_ids', count: 2 }] },
      { role: 'user', parts: [{ type: 'text', content: 'two' }] },
    ]);
    expect(embeddings.transcript.output({ data: [{ embedding: [0.1] }] })).toEqual([]);
  });

  it('gives each choice of an answer with its finish reason, and a messages answer as one assistant turn', () => {
    expect(chatTranscript.output({ choices: [{ message: { role: 'assistant', content: 'Yes.' }, finish_reason: 'stop' }] })).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'Yes.' }], finish_reason: 'stop' },
    ]);
    expect(messagesTranscript.output({ content: [{ type: 'text', text: 'No.' }], stop_reason: 'end_turn' })).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'No.' }], finish_reason: 'end_turn' },
    ]);
  });
});
