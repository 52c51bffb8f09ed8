// The wallet page shows each lot's expiry, in Korean and English: the date for a lot that expires, a word for
// one that never does, and after the expiry what left the lot; the audit trail says who moved it (the gateway).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../engine/core/clock.ts';
import { expireDueLots } from '../../engine/money/lot-expiry.ts';
import { startTestGateway, TEST_NOW, type TestGateway } from '../helpers/gateway.ts';
import { type OwnerClient, signIn } from './owner-client.ts';

const clock = fixedClock(TEST_NOW);
let t: TestGateway;
let owner: OwnerClient;
let walletId: string;

beforeAll(async () => {
  t = await startTestGateway({ clock });
  ({ id: walletId } = await t.gw.ledger.createWallet({ credits: 1_000 }));
  await t.gw.ledger.topUp(walletId, { credits: 2_000, expiresAt: new Date('2027-02-28T14:59:59Z') });
  owner = await signIn(t, walletId);
}, 60_000);

afterAll(() => t?.close());

const page = async (path: string, lang: 'ko' | 'en') => {
  const res = await fetch(`${t.url}${path}`, { headers: { cookie: `${owner.cookie}; lang=${lang}` } });
  expect(res.status).toBe(200);
  return res.text();
};

describe('the wallet page and the audit trail with lots that expire', () => {
  it('lists each lot with its expiry, then what left it, in both languages', async () => {
    const en = await page('/dashboard/wallet', 'en');
    expect(en).toContain('<th scope="col">Expires</th>');
    expect(en).toContain('never');
    expect(en).toContain('2027-02-28');
    const ko = await page('/dashboard/wallet', 'ko');
    expect(ko).toContain('<th scope="col">사용 기한</th>');
    expect(ko).toContain('없음');

    clock.set('2027-03-01T00:00:00Z');
    await expireDueLots(t.gw.db, 'test', clock.now(), (e) => expect.fail(String(e)));
    owner = await signIn(t, walletId); // the first session ended with the months the clock moved
    // What left the lot, in money (2,000 credits are ₩2.8, rounded down as what the wallet had).
    const walletEn = await page('/dashboard/wallet', 'en');
    expect(walletEn).toContain('<small class="usd">expired: ₩2 · $0.002</small>');
    const walletKo = await page('/dashboard/wallet', 'ko');
    expect(walletKo).toContain('<small class="usd">만료됨: ₩2 · US$0.002</small>');
    const trailEn = await page('/dashboard/audit', 'en');
    expect(trailEn).toContain('credits.expired');
    expect(trailEn).toContain('The gateway');
    const trailKo = await page('/dashboard/audit', 'ko');
    expect(trailKo).toContain('크레딧 만료');
    expect(trailKo).toContain('게이트웨이');
    // The lot's expiry in Korean time like every other time on the page; the gateway without its job's name.
    expect(trailKo).toContain('사용 기한 2027. 02. 28. 23:59 KST');
    expect(trailKo).not.toMatch(/\dT\d\d:\d\d:\d\d(\.\d+)?Z(?!")/);
    expect(trailKo).not.toContain('expiry');
  }, 30_000);
});
