// Every dashboard page, in Korean and in English, on a desktop (1280×800) and a phone (390×844), in a real
// browser (playwright-core driving Debian's chromium), over a wallet with something on every page: keys with
// limits, calls through two doors, a video job, management keys, managers, a webhook with a delivered and a
// pending delivery, and an audit trail of every kind of change, the operator's among them. On each page:
// nothing wider than the screen, and every table column wide enough to read (its cells' words never broken
// apart); on a Korean page, none of the gateway's English names (states, events, doors, units, actions),
// no raw message key, no unfilled parameter and no fallback particle such as 을(를). Screenshots of each go to
// test-results/dashboard/pages/ (gitignored).
import { mkdirSync, readFileSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { EVENT_TYPES } from '../../engine/alerts/index.ts';
import { AUDIT_ACTIONS, CLI_OPERATOR, recordAudit } from '../../engine/audit/trail.ts';
import { en } from '../../engine/dashboard/messages/en.ts';
import { expireDueLots } from '../../engine/money/lot-expiry.ts';
import { type Receiver, startReceiver } from '../alerts/receiver.ts';
import { post, sleep } from '../e2e/e2e.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { ADMIN, createdClassId, issueLink, type OwnerClient, signIn } from './owner-client.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = 'test-results/dashboard/pages';
/** The narrowest a table column may be: about four Latin letters or two Hangul syllables and some room. */
const READABLE_PX = 48;

/** The gateway's own English names that a Korean page must say in words. */
const ENGLISH_NAMES = [
  ...Object.keys(parse(readFileSync('config/doors.yaml', 'utf8'))),
  ...EVENT_TYPES,
  ...AUDIT_ACTIONS,
  'moderation_blocked',
  'vendor_failed',
  'timed_out',
  'undelivered',
  'pending',
  'delivered',
  'failed',
  'queued',
  'in_progress',
  'completed',
  'deleted',
  'nano-USD',
  'student',
  'teacher',
  'owner',
  'manager',
  'viewer',
  'management_key',
  'operator',
  'cli',
  'admin_api',
  'first_run',
  'active',
  'closed',
  'slot_race',
  'group_id',
  'expires_at',
  'expiry',
  'null',
];

let t: TestGateway;
let rx: Receiver;
let browser: Browser;
let owner: OwnerClient;
const at: Record<string, string> = {};

async function settled() {
  for (let i = 0; i < 100 && (await t.held()) !== 0n; i++) await sleep(20);
}

/** The id in the first `pattern` match of a page. */
const idIn = async (path: string, pattern: RegExp) => pattern.exec(await (await owner.get(path)).text())![1];

/** Keys, limits changed, one closed; calls through the chat and speech doors; a video; management keys. */
async function keysAndCalls() {
  const made = await owner.post('/dashboard/keys', { count: '3', name: 'class 3-2', monthly_limit_credits: '300', audience: 'teacher' });
  expect(made.status).toBe(303);
  const shown = await (await owner.follow(made)).text();
  const secrets = [...shown.matchAll(/<code class="secret"[^>]*>([^<]+)<\/code>/g)].map((m) => m[1]);
  expect(secrets).toHaveLength(3);
  const keyId = await idIn('/dashboard/keys', /action="\/dashboard\/keys\/([^"/]+)"/);
  const changed = await owner.post(`/dashboard/keys/${keyId}`, {
    name: 'class 3-2 1',
    monthly_limit_credits: '30000',
    daily_limit_credits: '',
  });
  expect(changed.status, await changed.clone().text()).toBe(303);
  // A class (key group) with a key of its own, for the classes pages.
  const group = await owner.post('/dashboard/groups', { name: '3학년 2반', monthly_limit_credits: '300,000', daily_limit_credits: '' });
  expect(group.status, await group.clone().text()).toBe(303);
  at.group = `/dashboard/groups/${encodeURIComponent(createdClassId(group))}`;
  expect((await owner.post(`${at.group}/keys`, { count: '2', name: '3-2', monthly_limit_credits: '' })).status).toBe(303);
  const closeIds = [...(await (await owner.get('/dashboard/keys')).text()).matchAll(/action="\/dashboard\/keys\/([^"/]+)\/close"/g)].map(
    (m) => m[1],
  );
  at.closeKey = `/dashboard/keys/${closeIds[0]}/close`;
  expect((await owner.post(`/dashboard/keys/${closeIds[2]}/close`, { confirm: 'yes' })).status).toBe(303);
  for (const [path, body] of [
    [
      '/v1/chat/completions',
      { model: 'b-5', messages: [{ role: 'user', content: 'hi [[sim:usage input=1234 output=321]]' }], max_completion_tokens: 2000 },
    ],
    ['/v1/audio/speech', { model: 'tts-1', input: '안녕하세요, 여러분. 오늘은 광합성을 배웁니다.', voice: 'alloy' }],
  ] as const) {
    const res = await post(t, path, body, { authorization: `Bearer ${t.apiKey}` });
    expect(res.status, await res.clone().text()).toBe(200);
    await res.arrayBuffer();
    at.call = `/dashboard/usage/${res.headers.get('x-request-id')}`;
    await settled();
  }
  const video = await post(
    t,
    '/v1/videos',
    { model: 'video-d-1', prompt: 'a lighthouse [[sim:cost=0.123]]', seconds: '4', size: '1280x720' },
    {
      authorization: `Bearer ${t.apiKey}`,
    },
  );
  expect(video.status, await video.clone().text()).toBe(200);
  const refused = await post(
    t,
    '/v1/videos',
    { model: 'video-d-1', prompt: 'a storm [[sim:output_moderated]]', seconds: '4', size: '1280x720' },
    {
      authorization: `Bearer ${t.apiKey}`,
    },
  );
  expect(refused.status, await refused.clone().text()).toBe(200);
  for (const name of ['backend', 'old server']) expect((await owner.post('/dashboard/management-keys', { name })).status).toBe(303);
  const mkId = await idIn('/dashboard/management-keys', /action="\/dashboard\/management-keys\/([^"/]+)\/close"/);
  at.closeManagementKey = `/dashboard/management-keys/${mkId}/close`;
}

/** Managers, alert thresholds, a webhook with a delivered and a pending delivery, the operator's changes. */
async function peopleAlertsAndOperator() {
  expect((await owner.post('/dashboard/managers', { identity: 'erin', role: 'viewer' })).status).toBe(303);
  expect((await owner.post('/dashboard/managers', { identity: 'erin', role: 'manager' })).status).toBe(303);
  expect(
    (await owner.post('/dashboard/webhooks/thresholds', { balance_credits: '999000', key_monthly_limit_percent: '80, 100' })).status,
  ).toBe(303);
  const form = Object.fromEntries(EVENT_TYPES.map((e) => [`event:${e}`, 'on']));
  expect((await owner.post('/dashboard/webhooks', { url: rx.url, ...form })).status).toBe(303);
  const res = await post(t, '/v1/chat/completions', {
    model: 'b-4.1-mini',
    max_tokens: 2000,
    messages: [{ role: 'user', content: 'x [[sim:usage output=2000]]' }],
  });
  expect(res.status).toBe(200);
  await res.text();
  await rx.waitFor(1);
  rx.answers.push(500, 500, 500, 500, 500);
  const replay = await idIn('/dashboard/webhooks', /action="(\/dashboard\/webhooks\/[^"]+\/replay)"/);
  expect((await owner.post(replay!, {})).status).toBe(303);
  await rx.waitFor(2);
  const topUp = await fetch(`${t.url}/admin/v1/wallets/${t.walletId}/credits`, {
    method: 'POST',
    headers: { ...ADMIN, 'content-type': 'application/json' },
    body: JSON.stringify({ credits: 5_000_000, vendors: ['c'] }),
  });
  expect(topUp.status, await topUp.clone().text()).toBe(201);
  // A lot that has expired already, for its expiry on the wallet page and the gateway's change in the trail.
  const expiring = await fetch(`${t.url}/admin/v1/wallets/${t.walletId}/credits`, {
    method: 'POST',
    headers: { ...ADMIN, 'content-type': 'application/json' },
    body: JSON.stringify({ credits: 2_000_000, expires_at: new Date(Date.now() - 1000).toISOString() }),
  });
  expect(expiring.status, await expiring.clone().text()).toBe(201);
  expect(await expireDueLots(t.gw.db, 'test', new Date(), (e) => expect.fail(String(e)))).toHaveLength(1);
  await recordAudit(
    t.gw.db,
    CLI_OPERATOR,
    { walletId: t.walletId, action: 'owner.changed', targetId: null, before: { owner_id: 'kim' }, after: { owner_id: 'lee' } },
    new Date(),
  );
}

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  rx = await startReceiver();
  t = await startTestGateway({
    credits: 1_000_000,
    env: { GATEWAY_WEBHOOKS_ALLOW_PRIVATE: '1', GATEWAY_VIDEO_POLL_MS: '25' },
    simulator: { videoStepMs: 50 },
  });
  owner = await signIn(t, t.walletId);
  await keysAndCalls();
  await peopleAlertsAndOperator();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await rx?.close();
});

/** Every page a signed-in owner can open, and the open ones, by a short name for the screenshots. */
function pages(): [string, string][] {
  return [
    ['wallet', '/dashboard/wallet'],
    ['keys', '/dashboard/keys'],
    ['keys-created', '/dashboard/keys/created'],
    ['close-key', at.closeKey!],
    ['groups', '/dashboard/groups'],
    ['group', at.group!],
    ['management-keys', '/dashboard/management-keys'],
    ['management-key-created', '/dashboard/management-keys/created'],
    ['close-management-key', at.closeManagementKey!],
    ['usage', '/dashboard/usage'],
    ['call', at.call!],
    ['videos', '/dashboard/videos'],
    ['audit', '/dashboard/audit'],
    ['webhooks', '/dashboard/webhooks'],
    ['managers', '/dashboard/managers'],
    ['not-found', '/dashboard/no-such-page'],
    ['signed-out', '/dashboard/signed-out'],
  ];
}

/** What a reader finds on the page: the widest thing, and each table column's narrowest width and broken words. */
function measure(page: Page) {
  return page.evaluate(() => {
    const columns: { table: number; column: string; width: number; broken: string }[] = [];
    document.querySelectorAll('table').forEach((table, ti) => {
      table.querySelectorAll('tr').forEach((tr) => {
        [...tr.children].forEach((cell) => {
          const head = table.querySelectorAll('thead th')[(cell as HTMLTableCellElement).cellIndex];
          const column = head?.textContent?.trim() || String((cell as HTMLTableCellElement).cellIndex);
          const width = cell.getBoundingClientRect().width;
          // A word broken across lines: one text node's single word drawn on more than one line.
          let broken = '';
          const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
          for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            if (!n.parentElement?.checkVisibility()) continue; // a closed <details>' form is not on the screen
            const text = n.textContent ?? '';
            for (const m of text.matchAll(/\S+/g)) {
              const r = document.createRange();
              r.setStart(n, m.index!);
              r.setEnd(n, m.index! + m[0].length);
              // Text moved off the screen for screen readers only (the skip class) is not read on it.
              const rects = [...r.getClientRects()].filter((b) => b.right > 0);
              const tops = new Set(rects.map((b) => Math.round(b.top)));
              if (tops.size > 1) broken = m[0];
            }
          }
          if ((cell.textContent ?? '').trim() !== '') columns.push({ table: ti, column, width, broken });
        });
      });
    });
    // A table wider than its scrolling box: its last columns are off the screen until scrolled to.
    const cut = [...document.querySelectorAll('.scroll')]
      .filter((s) => s.scrollWidth > s.clientWidth + 1)
      .map((s) => s.scrollWidth - s.clientWidth);
    // biome-ignore lint/performance/useDomNodeTextContent: the text a reader sees, not what closed <details> hold
    return { scrollWidth: document.documentElement.scrollWidth, columns, cut, text: document.body.innerText };
  });
}

const wholeWord = (name: string) => new RegExp(`(?<![\\w./-])${name.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}(?![\\w-]|\\.\\w)`);

/** What no page may show: a message key instead of its text, a parameter left unfilled, or markup as text. */
function rawLeftOn(text: string): string[] {
  const keys = Object.keys(en).filter((k) => k.includes('.') && !(en as Record<string, string>)[k]!.includes(k) && wholeWord(k).test(text));
  return [...keys, ...(text.match(/\{[^}\s]{1,20}\}/g) ?? []), ...(text.match(/<\/?[a-z][a-z0-9]*[\s>]/g) ?? [])];
}

/**
 * What a Korean page must not show besides: the gateway's English names, a fallback particle such as 을(를), or
 * a stored UTC instant where every time is said in Korean time.
 */
function englishLeftOn(text: string): string[] {
  const found = ENGLISH_NAMES.filter((n) => wholeWord(n).test(text));
  const particles = text.match(/[^\s]{0,8}\((을|를|은|는|이|가|과|와|으)\)[^\s]{0,4}/g) ?? [];
  return [...found, ...particles, ...(text.match(/\d{4}-\d\d-\d\dT\d\d:\d\d\S*/g) ?? [])];
}

describe('the audit trail in words', () => {
  it('says each change as a sentence and each actor in words, in Korean and in English', async () => {
    for (const [locale, lines] of [
      [
        'ko-KR',
        [
          '월 한도 300 → 30,000 크레딧 (&lt;₩1 → ₩42)',
          '운영자 (명령줄)',
          '충전량 5,000,000 크레딧 (₩7,000)',
          '사용 범위 공급사 C 전용',
          '역할 조회자 → 관리자',
          '상태 사용 중 → 닫힘',
          '반 3학년 2반',
        ],
      ],
      [
        'en-US',
        [
          'Monthly limit 300 → 30,000 credits (&lt;₩1 → ₩42)',
          'Operator (command line)',
          'Added 5,000,000 credits (₩7,000)',
          'Role viewer → manager',
          'Status open → closed',
          'Class 3학년 2반',
        ],
      ],
    ] as const) {
      const context = await browser.newContext({ locale });
      const page = await context.newPage();
      await page.goto((await issueLink(t, t.walletId)).url);
      await page.locator('main button[type="submit"]').click();
      await page.waitForURL(`${t.url}/dashboard/wallet`);
      await page.goto(`${t.url}/dashboard/audit`);
      const cells = await page.locator('tbody td').evaluateAll((tds) => tds.flatMap((td) => td.innerHTML.split('<br>')));
      const said = cells.map((c) => c.replace(/<[^>]+>/g, '').trim());
      for (const line of lines) expect(said, line).toContain(line);
      expect(said.join('\n')).not.toContain('{');
      await context.close();
    }
  });
});

describe('every dashboard page in both languages, on a desktop and a phone', () => {
  for (const locale of ['ko-KR', 'en-US']) {
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      it(`${locale} at ${viewport.width}×${viewport.height}: readable columns, nothing wider than the screen${locale === 'ko-KR' ? ', no English names' : ''}`, async () => {
        const context = await browser.newContext({ locale, viewport });
        const page = await context.newPage();
        const problems: string[] = [];
        const check = async (name: string) => {
          await page.screenshot({ path: `${SHOTS}/${locale}-${viewport.width}-${name}.png`, fullPage: true });
          const m = await measure(page);
          if (m.scrollWidth > viewport.width) problems.push(`${name}: the page is ${m.scrollWidth} px wide`);
          // A laptop shows every table whole; a phone scrolls them sideways.
          for (const px of viewport.width >= 1280 ? m.cut : []) problems.push(`${name}: a table ${px} px wider than the screen`);
          for (const c of m.columns) {
            if (c.width < READABLE_PX) problems.push(`${name}: column "${c.column}" of table ${c.table} is ${Math.round(c.width)} px wide`);
            if (c.broken) problems.push(`${name}: column "${c.column}" breaks "${c.broken}" across lines`);
          }
          for (const left of rawLeftOn(m.text)) problems.push(`${name}: "${left}" unfilled`);
          if (locale === 'ko-KR') for (const left of englishLeftOn(m.text)) problems.push(`${name}: "${left}" on a Korean page`);
        };
        await page.goto((await issueLink(t, t.walletId)).url);
        await check('sign-in');
        await page.locator('main button[type="submit"]').click();
        await page.waitForURL(`${t.url}/dashboard/wallet`);
        for (const [name, path] of pages()) {
          await page.goto(`${t.url}${path}`);
          await check(name);
        }
        expect([...new Set(problems)]).toEqual([]);
        await context.close();
      }, 120_000);
    }
  }
});
