// Where a body's image parts sit is each wire format's own declaration (Protocol `images`,
// transforms/protocols/<format>/): the hold leaves out the payload of a part only where the vendor's format carries
// content parts, and counts every byte elsewhere; an image part of any format counts an image wherever it sits.
import { describe, expect, it } from 'vitest';
import { measureBody } from '../../engine/catalog/body-measure.ts';
import type { ImageParts, ImageReading } from '../../engine/core/image-parts.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import { protocols } from '../../transforms/protocols/index.ts';

const long = 'A'.repeat(50_000);
const every = Object.values(protocols).flatMap((p) => (p.images ? [p.images] : []));
const readAs = (format: string): ImageReading => ({ parts: [protocols[format]!.images!], billed: every });

describe("a format's declaration decides where its image parts' payloads are left out", () => {
  // A format of a test's own, declaring a part type and positions no shipped format has.
  const toy: ImageParts = { types: ['picture'], lists: ['turns'], item_parts: ['pieces'], nested: 'inner' };
  const toyReading: ImageReading = { parts: [toy], billed: [toy] };

  it('leaves out the payload at the positions the format declares, nested ones included', () => {
    const body: JsonObject = {
      turns: [
        {
          pieces: [
            { type: 'picture', data: long },
            { type: 'box', inner: [{ type: 'picture', data: long }] },
          ],
        },
      ],
    };
    const m = measureBody(body, toyReading);
    expect(m.images).toBe(2);
    expect(m.bytes).toBeLessThan(1_000);
    // No format named: no position is known, and a type no format declares is no image.
    const unread = measureBody(body);
    expect(unread.images).toBe(0);
    expect(unread.bytes).toBeGreaterThan(2 * long.length);
  });

  it('counts the bytes of a part where the format declares none, and still counts it an image', () => {
    const elsewhere = measureBody({ turns: [{ other: [{ type: 'picture', data: long }] }] }, toyReading);
    expect(elsewhere.images).toBe(1);
    expect(elsewhere.bytes).toBeGreaterThan(long.length);
  });

  it("reads a body by the vendor's format: a chat part in a message is text to a format that carries none there", () => {
    const chat: JsonObject = {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${long}` } }] }],
    };
    const responses: JsonObject = {
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${long}` }] }],
    };
    const asChat = measureBody(chat, readAs('chat-completions'));
    expect([asChat.images, asChat.bytes < 1_000]).toEqual([1, true]);
    for (const other of ['messages', 'responses']) {
      const m = measureBody(chat, readAs(other));
      expect([m.images, m.bytes > long.length]).toEqual([1, true]);
    }
    const asResponses = measureBody(responses, readAs('responses'));
    expect([asResponses.images, asResponses.bytes < 1_000]).toEqual([1, true]);
    const m = measureBody(responses, readAs('chat-completions'));
    expect([m.images, m.bytes > long.length]).toEqual([1, true]);
  });
});
