// What a span records of an answer, in the three wire formats: the id, the model and why it stopped, from a
// whole answer or event by event; and, only when captured, the messages in the conventions' {role, parts} shape.
import { describe, expect, it } from 'vitest';
import { type AnswerFacts, gatherEventFacts, gatherFacts, noFacts } from '../../engine/telemetry/answer-facts.ts';
import { inputMessages, outputMessages } from '../../engine/telemetry/content.ts';

const events = (lines: object[]) => lines.reduce<AnswerFacts>((f, e) => gatherEventFacts(f, JSON.stringify(e)), noFacts());

describe('answer facts', () => {
  it('reads whole answers of chat completions, messages and responses', () => {
    expect(gatherFacts(noFacts(), { id: 'chatcmpl-1', model: 'b-5-2026', choices: [{ index: 0, finish_reason: 'length' }] })).toEqual({
      id: 'chatcmpl-1',
      model: 'b-5-2026',
      finishReasons: ['length'],
    });
    expect(gatherFacts(noFacts(), { id: 'msg_1', type: 'message', model: 'a-top', stop_reason: 'tool_use' })).toEqual({
      id: 'msg_1',
      model: 'a-top',
      finishReasons: ['tool_use'],
    });
    expect(gatherFacts(noFacts(), { id: 'resp_1', object: 'response', model: 'b-pro', status: 'incomplete' })).toEqual({
      id: 'resp_1',
      model: 'b-pro',
      finishReasons: ['incomplete'],
    });
  });

  it('reads streams: the id from the opening event, the reason from the one that ends it, never a null reason', () => {
    const chat = events([
      { id: 'chatcmpl-2', model: 'b-5', choices: [{ delta: { content: 'hi' }, finish_reason: null }] },
      { id: 'chatcmpl-2', model: 'b-5', choices: [{ delta: {}, finish_reason: 'stop' }] },
    ]);
    expect(chat).toEqual({ id: 'chatcmpl-2', model: 'b-5', finishReasons: ['stop'] });
    const messages = events([
      { type: 'message_start', message: { id: 'msg_2', model: 'a-top', stop_reason: null } },
      { type: 'content_block_delta', delta: { type: 'text_delta', text: 'x' } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' } },
    ]);
    expect(messages).toEqual({ id: 'msg_2', model: 'a-top', finishReasons: ['end_turn'] });
    const responses = events([
      { type: 'response.created', response: { id: 'resp_2', model: 'b-5', status: 'in_progress' } },
      { type: 'response.output_item.added', item: { type: 'message', status: 'in_progress' } },
      { type: 'response.completed', response: { id: 'resp_2', model: 'b-5', status: 'completed' } },
    ]);
    expect(responses).toEqual({ id: 'resp_2', model: 'b-5', finishReasons: ['completed'] });
  });

  it('skips data that is not JSON', () => {
    expect(gatherEventFacts(noFacts(), '[DONE]')).toEqual(noFacts());
  });
});

describe('captured content', () => {
  it('gives the system text first, then each turn, with text parts kept as text', () => {
    const input = JSON.parse(
      inputMessages({
        system: 'Be brief.',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: 'data:…' } },
            ],
          },
          { role: 'assistant', content: 'A cat.' },
        ],
      }),
    );
    expect(input).toEqual([
      { role: 'system', parts: [{ type: 'text', content: 'Be brief.' }] },
      {
        role: 'user',
        parts: [
          { type: 'text', content: 'What is this?' },
          { type: 'image_url', content: { type: 'image_url', image_url: { url: 'data:…' } } },
        ],
      },
      { role: 'assistant', parts: [{ type: 'text', content: 'A cat.' }] },
    ]);
    expect(JSON.parse(inputMessages({ input: 'hello' }))).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'hello' }] }]);
  });

  it('gives each choice of an answer with its finish reason, and a messages answer as one assistant turn', () => {
    expect(JSON.parse(outputMessages({ choices: [{ message: { role: 'assistant', content: 'Yes.' }, finish_reason: 'stop' }] }))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'Yes.' }], finish_reason: 'stop' },
    ]);
    expect(JSON.parse(outputMessages({ content: [{ type: 'text', text: 'No.' }] }))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'No.' }] },
    ]);
  });
});
