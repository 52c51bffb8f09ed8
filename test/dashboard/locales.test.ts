// The dashboard in both its languages, in a real browser (playwright-core driving Debian's chromium,
// headless). A browser set to Korean (ko-KR: Accept-Language ko) gets Korean pages: the wallet, keys and
// usage pages in Korean words, times in Korean time labelled KST, dollars written as Korean writes USD
// (US$), and a form that takes "5달러" and refuses in Korean. The switch on every page flips to English and
// the choice sticks across pages (the `lang` cookie beats Accept-Language); a browser set to English gets
// English. Screenshots of both go to test-results/dashboard/ (gitignored).
import { mkdirSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { cookieParts, issueLink } from './owner-client.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = 'test-results/dashboard';
const KO_TIME = /^\d{4}\. \d{2}\. \d{2}\. \d{2}:\d{2} KST$/;
const EN_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} KST$/;

let t: TestGateway;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  t = await startTestGateway();
  await t.gw.ledger.topUp(t.walletId, { credits: 5_000_000, vendors: ['c'] });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function signedIn(locale: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ locale });
  const page = await context.newPage();
  await page.goto((await issueLink(t, t.walletId)).url);
  return { context, page };
}

const h1 = (page: Page) => page.locator('h1').textContent();
const langCookie = async (context: BrowserContext) => (await context.cookies()).find((c) => c.name === 'lang')?.value;

async function settled() {
  for (let i = 0; i < 100 && (await t.held()) !== 0n; i++) await sleep(20);
}

describe('the dashboard in Korean and English', () => {
  it('a Korean browser gets Korean pages: wallet, keys, usage; KST times and US$ amounts', async () => {
    const { context, page } = await signedIn('ko-KR');
    const shot = (name: string) => page.screenshot({ path: `${SHOTS}/ko-${name}.png`, fullPage: true });
    // The sign-in page already speaks Korean.
    expect(await page.locator('html').getAttribute('lang')).toBe('ko');
    expect(await h1(page)).toBe('로그인');
    await shot('sign-in');
    await page.getByRole('button', { name: '로그인' }).click();
    await page.waitForURL(`${t.url}/dashboard/wallet`);

    // Wallet
    expect(await h1(page)).toBe('지갑');
    expect(await page.locator('dt').first().textContent()).toBe('사용할 수 있는 크레딧');
    expect(await page.getByTestId('credits').textContent()).toBe('105,000,000');
    expect(await page.getByTestId('summary-usd').textContent()).toBe('₩147,000 · US$105.00');
    expect(await page.getByTestId('summary').textContent()).toContain('잔액');
    expect(await page.locator('td', { hasText: '공급사 C 전용' }).count()).toBe(1);
    const added = await page.locator('table time').first().textContent();
    expect(added).toMatch(KO_TIME);
    expect(await page.getByRole('navigation', { name: '대시보드' }).getByRole('link').allTextContents()).toEqual([
      '지갑',
      'API 키',
      '반',
      '관리용 키',
      '사용량',
      '동영상',
      '변경 기록',
      '알림',
      '관리자',
    ]);
    expect(await page.getByRole('button', { name: '로그아웃' }).count()).toBe(1);
    await shot('wallet');

    // Keys: the form in Korean, an amount typed the Korean way, a refusal in Korean.
    await page.getByRole('link', { name: 'API 키', exact: true }).click();
    expect(await h1(page)).toBe('API 키');
    const create = page.getByRole('group', { name: 'API 키 만들기' });
    await create.getByLabel(/^이름/).fill('수학반');
    await create.getByLabel(/^월 한도/).fill('많이');
    await create.getByRole('button', { name: '만들기' }).click();
    await expect
      .poll(() => create.getByRole('alert').textContent())
      .toBe('월 한도: "많이"는 금액이 아닙니다. 원화(예: ₩50,000), 크레딧(예: 500,000) 또는 달러(예: $5, 5 USD)로 입력하세요.');
    await create.getByLabel(/^월 한도/).fill('5달러');
    await create.getByRole('button', { name: '만들기' }).click();
    await expect.poll(() => h1(page)).toBe('키를 만들었습니다');
    const key = (await page.locator('code.secret').textContent())!;
    expect(await page.getByRole('alert').textContent()).toContain('지금 키를 복사하세요');
    await shot('key-created');
    await page.getByRole('link', { name: '키 목록으로 돌아가기' }).click();
    const row = page.locator('tbody tr', { hasText: '수학반' });
    expect(await row.getByTestId('month').textContent()).toBe('0 / 5,000,000');
    expect(await row.locator('td.num').first().textContent()).toBe('₩0 · US$0.00 / ₩7,000 · US$5.00 0 / 5,000,000');
    expect(await page.locator('caption').first().textContent()).toBe('사용 중인 API 키 (최신 순)');
    await shot('keys');

    // Usage: a call made with the key, its time in KST the Korean way, its charge exact.
    const res = await post(
      t,
      '/v1/chat/completions',
      { model: 'b-5', messages: [{ role: 'user', content: 'hi [[sim:usage input=1234 output=321]]' }], max_completion_tokens: 2000 },
      { authorization: `Bearer ${key}` },
    );
    expect(res.status, await res.clone().text()).toBe(200);
    const nano = BigInt(res.headers.get('x-service-charged-nano')!);
    await settled();
    await page.getByRole('link', { name: '사용량', exact: true }).click();
    expect(await h1(page)).toBe('사용량');
    expect(await page.locator('h2').allTextContents()).toEqual(['일별 크레딧 (최근 30일, 한국 날짜 기준)', '최근 호출']);
    const call = page.locator(`tr[data-generation-id="${res.headers.get('x-request-id')}"]`);
    expect(await call.locator('time').textContent()).toMatch(KO_TIME);
    expect(await call.locator('td').nth(1).textContent()).toBe('수학반');
    expect(await call.getByTestId('charge').getAttribute('data-nano')).toBe(nano.toString());
    expect(await call.locator('.usd').textContent()).toMatch(/^\((?:<₩1|₩[\d,]+) · US\$[\d.,]+\)$/);
    expect(await page.locator('svg[data-testid="usage-chart"] desc').textContent()).toContain('한국 날짜 기준 일별 청구 크레딧');
    expect(await page.getByRole('link', { name: '이 호출들을 CSV로 내려받기' }).count()).toBe(1);
    await shot('usage');

    // The CSV stays machine-readable: English header whatever the page's language.
    const csv = await (await context.request.get(`${t.url}/dashboard/usage.csv`)).text();
    expect(csv.split('\r\n')[0]).toMatch(/^\uFEFFid,created_at,key_id,key_name,/); // a byte-order mark for Excel

    // The switch: English, on this page and the next ones, although the browser still asks for Korean.
    await page.getByRole('button', { name: 'English' }).click();
    await expect.poll(() => h1(page)).toBe('Usage');
    expect(page.url()).toBe(`${t.url}/dashboard/usage`);
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    expect(await langCookie(context)).toBe('en');
    expect(await call.locator('time').textContent()).toMatch(EN_TIME);
    await page.getByRole('link', { name: 'Wallet', exact: true }).first().click();
    expect(await h1(page)).toBe('Wallet');
    expect(await page.getByTestId('summary-usd').textContent()).toMatch(/^₩[\d,]+ · \$[\d,]+\.\d\d$/);
    await page.goto(`${t.url}/dashboard/keys`);
    expect(await h1(page)).toBe('API keys');
    expect(await page.locator('tbody tr', { hasText: '수학반' }).getByTestId('month').textContent()).toMatch(/^[1-9][\d,]* of 5,000,000$/);
    await page.screenshot({ path: `${SHOTS}/ko-switched-to-en-keys.png`, fullPage: true });

    // And back to Korean.
    await page.getByRole('button', { name: '한국어' }).click();
    await expect.poll(() => h1(page)).toBe('API 키');
    expect(await langCookie(context)).toBe('ko');
    await page.goto(`${t.url}/dashboard/audit`);
    expect(await h1(page)).toBe('변경 기록');
    expect(await page.locator('td', { hasText: '키 생성' }).count()).toBeGreaterThan(0);
    await shot('audit');

    // Alerts and webhooks, and one call's prices, in Korean.
    await page.goto(`${t.url}/dashboard/webhooks`);
    expect(await h1(page)).toBe('알림과 웹훅');
    expect(await page.getByRole('button', { name: '기준 저장' }).count()).toBe(1);
    expect(await page.getByText('등록된 웹훅이 없습니다.').count()).toBe(1);
    await page.goto(`${t.url}/dashboard/usage/${res.headers.get('x-request-id')}`);
    expect(await page.locator('h2').allTextContents()).toContain('적용된 가격');
    expect(await page.getByTestId('prices').textContent()).toContain('토큰 100만 개당');
    await shot('call-prices');

    // Korean words are longer on the screen than English ones: at phone width still no page scrolls sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    for (const path of ['wallet', 'keys', 'management-keys', 'usage', 'videos', 'audit', 'webhooks']) {
      await page.goto(`${t.url}/dashboard/${path}`);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(390);
    }
    await shot('phone-audit');
    await page.setViewportSize({ width: 1280, height: 720 });

    await page.getByRole('button', { name: '로그아웃' }).click();
    await expect.poll(() => h1(page)).toBe('로그아웃됨');
    await context.close();
  });

  it('an English browser gets English pages, with the switch to Korean', async () => {
    const { context, page } = await signedIn('en-US');
    const shot = (name: string) => page.screenshot({ path: `${SHOTS}/en-${name}.png`, fullPage: true });
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${t.url}/dashboard/wallet`);
    expect(await h1(page)).toBe('Wallet');
    expect(await page.locator('dt').first().textContent()).toBe('Credits you can spend');
    expect(await page.locator('table time').first().textContent()).toMatch(EN_TIME);
    expect(await page.getByTestId('summary-usd').textContent()).toMatch(/^₩[\d,]+ · \$[\d,]+\.\d\d$/);
    expect(await page.getByRole('button', { name: '한국어' }).getAttribute('lang')).toBe('ko');
    await shot('wallet');
    for (const [path, title] of [
      ['keys', 'API keys'],
      ['usage', 'Usage'],
    ]) {
      await page.goto(`${t.url}/dashboard/${path}`);
      expect(await h1(page)).toBe(title);
      await shot(path!);
    }
    expect(await langCookie(context)).toBe(undefined);
    await context.close();
  });

  it('a browser that names neither language gets English; the switch only leads back to dashboard pages', async () => {
    const res = await fetch(`${t.url}/dashboard/signed-out`, { headers: { 'accept-language': 'fr-FR,de;q=0.8' } });
    expect(await res.text()).toContain('<html lang="en">');
    expect(res.headers.get('content-language')).toBe('en');
    const ko = await fetch(`${t.url}/dashboard/signed-out`, { headers: { 'accept-language': 'fr-FR,ko;q=0.8' } });
    expect(await ko.text()).toContain('<h1>로그아웃됨</h1>');
    for (const back of ['https://evil.example/', '//evil.example/dashboard', '/admin/v1/wallets']) {
      const sw = await fetch(`${t.url}/dashboard/lang`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ lang: 'ko', back }).toString(),
      });
      expect(sw.status, back).toBe(303);
      expect(sw.headers.get('location'), back).toBe('/dashboard');
      expect(cookieParts(sw.headers.get('set-cookie') ?? '')).toEqual({
        name: 'lang',
        value: 'ko',
        attributes: { path: '/', 'max-age': expect.stringMatching(/^\d+$/), samesite: 'Lax' },
      });
    }
  });
});

// Sign-in through the school's identity provider and the managers page, in Korean. The provider need not answer
// for the pages that only name it; one that cannot be reached is refused in Korean, its technical reason kept.
describe('the provider sign-in and the managers page in Korean', () => {
  let g: TestGateway;
  const provider = {
    GATEWAY_OIDC_ISSUER: 'http://127.0.0.1:9/',
    GATEWAY_OIDC_CLIENT_ID: 'gw',
    GATEWAY_OIDC_CLIENT_SECRET: 'secret',
    GATEWAY_OIDC_NAME: '한빛고',
  };
  beforeAll(async () => {
    g = await startTestGateway({ env: provider });
  });
  afterAll(async () => {
    await g?.close();
  });

  it('offers the provider in Korean, refuses in Korean, and lets the owner add and remove managers in Korean', async () => {
    const context = await browser.newContext({ locale: 'ko-KR' });
    const page = await context.newPage();
    await page.goto(`${g.url}/dashboard/sign-in`);
    expect(await h1(page)).toBe('로그인');
    await page.getByRole('link', { name: '한빛고 계정으로 로그인' }).click();
    await expect.poll(() => h1(page)).toBe('로그인하지 못했습니다');
    const refusal = await page.getByTestId('refusal').textContent();
    expect(refusal).toContain('ID 공급자에 연결할 수 없거나');
    expect(refusal).toContain('http://127.0.0.1:9/');
    expect(await page.getByRole('link', { name: '로그인 다시 시작' }).count()).toBe(1);

    await page.goto((await issueLink(g, g.walletId)).url);
    await page.getByRole('button', { name: '로그인' }).click();
    await page.waitForURL(`${g.url}/dashboard/wallet`);
    await page.getByRole('navigation', { name: '대시보드' }).getByRole('link', { name: '관리자' }).click();
    expect(await h1(page)).toBe('관리자');
    expect(await page.locator('main').textContent()).toContain('관리자는 한빛고 계정으로 로그인합니다.');
    expect(await page.locator('main li strong').allTextContents()).toEqual(['소유자', '관리자', '조회자']);
    expect(await page.getByTestId('empty').textContent()).toBe('관리자가 없습니다. 이 지갑에는 소유자만 로그인합니다.');
    const form = page.getByRole('group', { name: '관리자 추가 또는 역할 변경' });
    await form.getByLabel(/^관리자의 subject/).fill('erin');
    await form.getByLabel('역할').selectOption('viewer');
    await form.getByRole('button', { name: '관리자 저장' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('관리자를 추가했습니다. 이제 로그인할 수 있습니다.');
    expect(await page.locator('tr[data-manager="erin"] td').nth(1).textContent()).toBe('조회자');
    await page.screenshot({ path: `${SHOTS}/ko-managers.png`, fullPage: true });
    await page.getByRole('button', { name: 'erin 삭제' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('관리자를 삭제했습니다. 다음 페이지를 열 때 세션이 끝납니다.');

    await page.goto(`${g.url}/dashboard/audit`);
    expect(await page.locator('td', { hasText: '관리자 추가' }).count()).toBe(1);
    expect(await page.locator('td', { hasText: '관리자 삭제' }).count()).toBe(1);
    await context.close();
  });
});
