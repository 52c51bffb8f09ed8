// The hold of a token-priced image call covers what the vendor bills for it: the prompt's text, the source
// images of an edit and the output of the quality asked. A client could otherwise send a 10 MB prompt or ask
// for high quality and be charged only the flat per-image reservation (settling charges no more than the
// balance covers). The published per-image reservation still stands for a call that asks for medium quality; with
// none or auto the vendor picks, and may pick high, so high is held (found by an attack on the class limits: an
// auto image held as medium charged a key 187,250 credits past a monthly limit of 115,000).

import { afterEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../simulator/tokens.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { expectJournalAddsUp } from '../helpers/ledger.ts';
import { post } from './e2e.ts';

let t: TestGateway | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const RESERVATION_CREDITS = 110_000; // image-b-1: $0.11 per image (catalog/media.yaml)
const reserved = async (g: TestGateway) => await g.held();

async function imageCall(g: TestGateway, body: Record<string, unknown>) {
  const before = await g.balance();
  const sent = g.received('b').length;
  const res = await post(g, '/v1/images/generations', { model: 'image-b-1', ...body });
  const text = await res.text();
  return { status: res.status, text, charged: before - (await g.balance()), vendorCalls: g.received('b').length - sent };
}

describe('image generation holds', () => {
  it('a 1 MB prompt on a wallet of exactly the per-image reservation: 402 before the vendor, nothing held', async () => {
    t = await startTestGateway({ credits: RESERVATION_CREDITS });
    const r = await imageCall(t, { prompt: 'x'.repeat(1_000_000), quality: 'medium' });
    expect(r.status, r.text).toBe(402);
    expect(r.vendorCalls).toBe(0);
    expect(r.charged).toBe(0n);
    expect(await reserved(t)).toBe(0n);
  });

  it('quality high holds the high output (6,240 tokens at $30/M), more than the per-image reservation', async () => {
    t = await startTestGateway({ credits: RESERVATION_CREDITS });
    const r = await imageCall(t, { prompt: 'a lighthouse', quality: 'high' });
    expect(r.status, r.text).toBe(402);
    expect(r.vendorCalls).toBe(0);
  });

  // Found by an attack helper: "HIGH" or "hd" were held as no quality at all (medium), while a vendor reading
  // them as high produces the high output. A quality the table does not name is held as the largest figure, and
  // so are none and auto, where the vendor picks.
  it('none, auto, or a quality the table does not name ("HIGH", "hd", a list) is held as high: 402 on the same wallet', async () => {
    t = await startTestGateway({ credits: RESERVATION_CREDITS });
    for (const quality of [undefined, 'auto', 'HIGH', 'hd', ['high'], 'default']) {
      const r = await imageCall(t, quality === undefined ? { prompt: 'a lighthouse' } : { prompt: 'a lighthouse', quality });
      expect(r.status, `${JSON.stringify(quality)}: ${r.text}`).toBe(402);
      expect(r.vendorCalls).toBe(0);
    }
    const medium = await imageCall(t, { prompt: 'a lighthouse', quality: 'medium' });
    expect(medium.status, medium.text).toBe(200);
  });

  it('a medium call holds the published reservation and is charged exactly the vendor usage', async () => {
    t = await startTestGateway({ credits: RESERVATION_CREDITS });
    const r = await imageCall(t, { prompt: 'a lighthouse', quality: 'medium' });
    expect(r.status, r.text).toBe(200);
    // simulator: the prompt's tokens (a real tokenizer) at $5/M, 1,056 output tokens at $30/M
    expect(r.charged).toBe(BigInt(countTokens('a lighthouse')) * 5_000n + 1056n * 30_000n);
    expect(await reserved(t)).toBe(0n);
  });

  it('a long prompt on a wallet that covers it is charged exactly what the vendor counted', async () => {
    t = await startTestGateway({ credits: 10_000_000 });
    const r = await imageCall(t, { prompt: 'y'.repeat(400_000), quality: 'high' });
    expect(r.status, r.text).toBe(200);
    expect(r.charged).toBe(BigInt(countTokens('y'.repeat(400_000))) * 5_000n + 4160n * 30_000n);
    await expectJournalAddsUp(t.gw.db, t.walletId);
  });
});
