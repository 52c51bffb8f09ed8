// The dashboard's two catalogs and what reads them: Korean has exactly the English keys, no empty text and
// the same parameters; t() fills parameters in, th() escapes them; the locale comes from the cookie, then
// Accept-Language, then English; amounts and times are written for the locale; refusals speak it.
import { readFileSync } from 'node:fs';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { EVENT_TYPES } from '../../engine/alerts/index.ts';
import { AUDIT_ACTIONS } from '../../engine/audit/trail.ts';
import { errors } from '../../engine/core/errors.ts';
import { creditsFromText } from '../../engine/dashboard/amounts.ts';
import { inWords } from '../../engine/dashboard/form-errors.ts';
import { html } from '../../engine/dashboard/html.ts';
import { fromAcceptLanguage, localeOf, t, th, uiOf } from '../../engine/dashboard/i18n.ts';
import { en } from '../../engine/dashboard/messages/en.ts';
import { ko } from '../../engine/dashboard/messages/ko.ts';

const params = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
const HANGUL = /[\uAC00-\uD7A3]/;

describe('the catalogs', () => {
  it('ko has exactly the keys en has, and no text is empty', () => {
    expect(Object.keys(ko).sort()).toEqual(Object.keys(en).sort());
    for (const [key, text] of [...Object.entries(en), ...Object.entries(ko)]) expect(text.trim(), key).not.toBe('');
  });

  it('each Korean text takes the same parameters as its English one', () => {
    for (const key of Object.keys(en) as (keyof typeof en)[]) expect(params(ko[key]), key).toEqual(params(en[key]));
  });

  it('Korean texts are Korean: all but names, codes and the language names have Hangul', () => {
    // Only parameters, punctuation, codes and the languages' own names.
    const sameByDesign = new Set([
      'lang.en',
      'time.suffix',
      'keys.field.amount',
      'keys.used_of',
      'amount.error',
      'usage.filter_and',
      'usage.charged_rest',
      'usage.nano_usd',
      'audit.change',
      'audit.set',
      'audit.with_unit',
    ]);
    const notKorean = Object.entries(ko)
      .filter(([k, v]) => !HANGUL.test(v) && !sameByDesign.has(k))
      .map(([k]) => k);
    expect(notKorean).toEqual([]);
  });
});

describe('the gateway’s own names', () => {
  it('every door, webhook event and audit action has its words, so a Korean page never falls back to the name', () => {
    const names = [
      ...Object.keys(parse(readFileSync('config/doors.yaml', 'utf8'))).map((d) => `door.${d}`),
      ...EVENT_TYPES.map((e) => `wh.event.${e}`),
      ...AUDIT_ACTIONS.map((a) => `audit.action.${a}`),
    ];
    expect(names.filter((k) => !(k in ko) || !HANGUL.test((ko as Record<string, string>)[k]!))).toEqual([]);
  });
});

describe('Korean particles', () => {
  it('are chosen from the word, never written as 을(를)', () => {
    const fallback = Object.entries(ko).filter(([, v]) => /\((을|를|은|는|이|가|과|와|으)\)/.test(v));
    expect(fallback.map(([k]) => k)).toEqual([]);
    // The issue's own example: "class 3-2 3" ends in 삼, a final consonant.
    expect(t('ko', 'close.title', { label: 'class 3-2 3' })).toBe('class 3-2 3을 닫을까요?');
    for (const [label, title] of [
      ['class 3-2 2', 'class 3-2 2를 닫을까요?'],
      ['수학반', '수학반을 닫을까요?'],
      ['과학', '과학을 닫을까요?'],
      ['국어', '국어를 닫을까요?'],
      ['lab', 'lab을 닫을까요?'],
      ['backend', 'backend를 닫을까요?'],
      // The first start's key: 디벨롭먼트 ends in a vowel, as "test" (테스트) does; "cat" (캣) does not.
      ['development', 'development를 닫을까요?'],
      ['test', 'test를 닫을까요?'],
      ['cat', 'cat을 닫을까요?'],
      ['sk-svc-Ab12C…', 'sk-svc-Ab12C…를 닫을까요?'],
      ['sk-svc-Ab12M…', 'sk-svc-Ab12M…을 닫을까요?'],
      // A word without a vowel is read letter by letter: "kr" 케이알 ends in ㄹ, "www" 더블유 in a vowel.
      ['https://hooks.example.kr', 'https://hooks.example.kr을 닫을까요?'],
      ['www', 'www를 닫을까요?'],
    ]) {
      expect(t('ko', 'close.title', { label }), label).toBe(title);
    }
    // Through our own markup and closing quotes, and each pair: 은/는, 과/와, 으로/로 (ㄹ takes 로).
    expect(th('ko', 'close.notice', { kind: 'API 키', label: '7반', consequence: '끝.' }).text).toContain('<strong>7반</strong>을 닫으면');
    expect(t('ko', 'amount.too_large', { text: '1조' })).toBe('"1조"는 너무 큽니다.');
    expect(t('ko', 'oidc.refused.unreachable', { issuer: 'https://sso.hanbit.kr', detail: 'x' })).toContain('https://sso.hanbit.kr과 맞지');
    expect(t('ko', 'oidc.refused.unreachable', { issuer: '한빛고 계정', detail: 'x' })).toContain('한빛고 계정과 맞지');
    const prefix = (p: string) => t('ko', 'formerr.reserved_prefix', { field: '이름', prefix: p });
    expect(prefix('팀')).toContain("'팀'으로 시작할");
    expect(prefix('서울')).toContain("'서울'로 시작할");
    expect(prefix('mail')).toContain("'mail'로 시작할");
    expect(prefix('chat-')).toContain("'chat-'으로 시작할"); // 챗
    expect(prefix('이름')).toContain('이름은');
  });

  it('a value that looks like a parameter or a particle is never filled in', () => {
    expect(t('ko', 'close.title', { label: '{label}{을/를}' })).toBe('{label}{을/를}을 닫을까요?');
  });
});

describe('t and th', () => {
  it('t fills parameters in, leaves unknown ones, and keeps text plain', () => {
    expect(t('en', 'keys.used_of', { used: '0', limit: '1,000,000' })).toBe('0 of 1,000,000');
    expect(t('ko', 'created.title_many', { n: 3 })).toBe('키 3개를 만들었습니다');
    expect(t('en', 'close.title', { label: '<b>x</b>' })).toBe('Close <b>x</b>?'); // the html template escapes it later
    expect(t('en', 'close.title')).toBe('Close {label}?');
  });

  it('th keeps the catalog’s markup and escapes parameters unless they are Html', () => {
    expect(th('en', 'close.notice', { kind: 'API key', label: '<img src=x>', consequence: 'gone.' }).text).toBe(
      'Closing the API key <strong>&lt;img src=x&gt;</strong> is for good: gone. It cannot be opened again.',
    );
    expect(th('ko', 'summary.balance', { usd: html`<strong>${'US$1.00'}</strong>` }).text).toBe('잔액 <strong>US$1.00</strong>');
  });
});

describe('the locale', () => {
  // A dashboard request as @fastify/cookie leaves it: its cookies parsed (locales.test.ts sends real ones).
  const req = (headers: Record<string, string>, cookies: Record<string, string> = {}) =>
    ({ headers, cookies }) as unknown as FastifyRequest;
  it('Accept-Language picks ko or en by weight; neither is English', () => {
    expect(fromAcceptLanguage('ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7')).toBe('ko');
    expect(fromAcceptLanguage('en-US,en;q=0.9,ko;q=0.8')).toBe('en');
    expect(fromAcceptLanguage('ja;q=1, ko;q=0.5, en;q=0.6')).toBe('en');
    expect(fromAcceptLanguage('fr-FR,de')).toBe(null);
    expect(localeOf(req({ 'accept-language': 'fr' }))).toBe('en');
    expect(localeOf(req({}))).toBe('en');
  });
  it('the lang cookie wins over Accept-Language; a bad one is ignored', () => {
    expect(localeOf(req({ 'accept-language': 'ko-KR' }, { gateway_dashboard: 'abc', lang: 'en' }))).toBe('en');
    expect(localeOf(req({ 'accept-language': 'en-US' }, { lang: 'ko' }))).toBe('ko');
    expect(localeOf(req({ 'accept-language': 'ko' }, { lang: 'fr' }))).toBe('ko');
  });
});

describe('formats', () => {
  const [enUi, koUi] = [uiOf('en'), uiOf('ko')];
  it('money: the same exact credits, dollars as each locale writes USD', () => {
    expect(enUi.money(105_000_000_000n, 'down')).toBe('$105.00');
    expect(koUi.money(105_000_000_000n, 'up')).toBe('US$105.00');
    expect(koUi.money(123n, 'up')).toBe('US$0.000000123');
    expect(koUi.exact(198_981_960n)).toBe('198,981.960');
    expect(koUi.credits(1_000_000)).toBe('1,000,000');
  });
  it('money with a display currency: whole won first, the dollars beside; under one won but not zero reads <₩1', () => {
    const won = { code: 'KRW', per_usd: 1400 };
    expect(uiOf('ko', won).moneyOfCredits(50_000_000, 'down')).toBe('₩70,000 · US$50.00');
    expect(uiOf('en', won).money(50_000_000_000n, 'up')).toBe('₩70,000 · $50.00');
    expect(uiOf('en', won).money(8_800n, 'up')).toBe('<₩1 · $0.0000088');
    expect(uiOf('en', won).money(357_142n, 'up')).toBe('<₩1 · $0.000357142');
    // Half a won and more is still under one: a charge never reads ₩0, a balance never reads a won it lacks.
    expect(uiOf('en', won).money(357_143n, 'up')).toBe('<₩1 · $0.000357143');
    expect(uiOf('en', won).money(357_143n, 'down')).toBe('<₩1 · $0.000357143');
    expect(uiOf('en', won).money(714_286n, 'up')).toBe('₩2 · $0.000714286');
    expect(uiOf('en', won).money(714_286n, 'down')).toBe('₩1 · $0.000714286');
  });
  it('times in Korean time with the KST label; Korean writes dates the Korean way', () => {
    expect(enUi.time('2026-11-27T13:26:00Z').text).toContain('>2026-11-27 22:26 KST</time>');
    expect(koUi.time('2026-11-27T13:26:00Z').text).toContain('>2026. 11. 27. 22:26 KST</time>');
    expect(koUi.time('2026-12-31T15:30:00Z').text).toContain('>2027. 01. 01. 00:30 KST</time>'); // the Korean day, not UTC's
    expect(koUi.day('2026-12-31')).toBe('2026. 12. 31.');
    expect(enUi.day('2026-12-31')).toBe('2026-12-31');
  });
});

describe('forms in Korean', () => {
  const read = (text: string) => creditsFromText(text, 'monthly_limit_credits', '월 한도', 'ko');
  it('amounts parse the same in either locale, with the Korean words too', () => {
    for (const [text, credits] of [
      ['$5', 5_000_000],
      ['5 USD', 5_000_000],
      ['1,000,000', 1_000_000],
      ['1,000,000 크레딧', 1_000_000],
      ['5달러', 5_000_000],
    ] as const) {
      expect(read(text), text).toBe(credits);
    }
    expect(() => read('많이')).toThrow('월 한도: "많이"는 금액이 아닙니다.');
    expect(() => read('삼천')).toThrow('월 한도: "삼천"은 금액이 아닙니다.');
  });
  it('the key checks’ refusals in Korean form words', () => {
    const e = errors.invalidRequest('daily_limit_credits (9) must not exceed monthly_limit_credits (5).', 'daily_limit_credits');
    expect(inWords(e, uiOf('ko'))).toBe('일 한도(9)는 월 한도(5)보다 클 수 없습니다.');
    // With won shown, the limits read back in won as the owner typed them (₩600 is 428,571 credits), dollars beside.
    const won = errors.invalidRequest(
      'daily_limit_credits (428571) must not exceed monthly_limit_credits (357142).',
      'daily_limit_credits',
    );
    expect(inWords(won, uiOf('ko', { code: 'KRW', per_usd: 1400 }))).toBe(
      '일 한도(₩600 · US$0.43)는 월 한도(₩500 · US$0.36)보다 클 수 없습니다.',
    );
    expect(inWords(e, uiOf('en'))).toBe('The daily limit (9) must not exceed the monthly limit (5).');
    const past = errors.invalidRequest(
      'expires_on 2020-01-01 is earlier than today (2026-11-27, Korean time). To close a key now, use DELETE /v1/keys/{id}.',
      'expires_on',
    );
    expect(inWords(past, uiOf('ko'))).toBe(
      '마지막 사용일 2020. 1. 1.은 오늘(2026. 11. 27., 한국 시간)보다 이전입니다. 키를 지금 멈추려면 키를 닫으세요.',
    );
    expect(inWords(past, uiOf('en'))).toBe(
      'The last day 2020-01-01 is earlier than today (2026-11-27, Korean time). To stop a key now, close it.',
    );
    const models = errors.invalidRequest(
      'models must be a list of up to 50 model ids or patterns ending in * (such as "b-*"), or null for every model; models[0] ("b c") is not one.',
      'models',
    );
    expect(inWords(models, uiOf('ko'))).toContain('항목 ("b c")는 올바르지 않습니다');
    expect(inWords(errors.invalidRequest('Something new.', 'x'), uiOf('ko'))).toBe(
      '입력한 내용을 처리하지 못했습니다. 자세한 내용(영문): Something new.',
    );
  });
});
