// The hold reads a body's image parts as the vendor's wire format declares them (Protocol `images`): the call's
// chain to that format sets them (prepareCall), and an image part another format would carry there is text to this
// vendor, its bytes held as text besides an image's allowance.
import { describe, expect, it } from 'vitest';
import { holdFor } from '../../engine/calls/hold-size.ts';
import { prepareCall } from '../../engine/calls/prepare.ts';
import { loadSnapshot } from '../../engine/catalog/runtime.ts';
import type { JsonObject } from '../../engine/core/types.ts';
import type { Caller } from '../../engine/money/accounts.ts';
import { protocols } from '../../transforms/protocols/index.ts';

const snap = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);
const NOW = new Date('2026-11-21T03:00:00Z');
const caller: Caller = { keyId: 'k', walletId: 'w', keyPrefix: 'sk-test', audience: null };

const hold = (part: JsonObject): bigint => {
  const body = { model: 'b-6', max_output_tokens: 16, input: [{ role: 'user', content: [{ type: 'input_text', text: 'x' }, part] }] };
  const door = snap.config.doors.responses!;
  const { call } = prepareCall(snap, door, body, {}, caller, { protocols }, { now: NOW });
  return holdFor(door, call, snap, NOW).amount;
};

describe("the hold follows the vendor's format", () => {
  it("leaves out an image's payload where the format carries content parts, and holds it as text where it does not", () => {
    const url = `data:image/png;base64,${'A'.repeat(200_000)}`;
    const own = hold({ type: 'input_image', image_url: url });
    const chatShaped = hold({ type: 'image_url', image_url: { url } });
    // b-6 input: $5 per 1M tokens (5,000 nano a token); 200,000 bytes are held as at least 200,000 tokens more.
    expect(chatShaped - own).toBeGreaterThanOrEqual(200_000n * 5_000n);
  });
});
