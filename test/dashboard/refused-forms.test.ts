// A refused alerts form comes back on the alerts page filled in as typed, with the reason in the form's words
// beside it, in Korean and English: a webhook to a loopback address, a webhook with no event ticked, a threshold
// out of range. A class that is not there is a not-found page in the page's language.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { createdClassId, type OwnerClient, signIn } from './owner-client.ts';

let t: TestGateway;
let owner: OwnerClient;

beforeAll(async () => {
  t = await startTestGateway({ credits: 1_000 }); // without GATEWAY_WEBHOOKS_ALLOW_PRIVATE: loopback is refused
  owner = await signIn(t, t.walletId);
}, 60_000);

afterAll(() => t?.close());

const send = (lang: 'ko' | 'en', path: string, form: Record<string, string>) =>
  fetch(`${t.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: `${owner.cookie}; lang=${lang}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...form, csrf: owner.csrf }).toString(),
  });

/** The refusal beside the form `target`, and the page around it. */
async function refused(res: Response, target: string) {
  expect(res.status).toBe(400);
  const page = await res.text();
  const reason = new RegExp(`<p class="error" role="alert" id="error-${target}">([^<]*)</p>`).exec(page)?.[1];
  expect(reason, page).toBeDefined();
  return { page, reason: reason! };
}

describe('refused alerts forms', () => {
  it('a webhook to a loopback address: the address and the events kept, the reason in the page’s words', async () => {
    const form = { url: 'http://127.0.0.1/x', 'event:video.finished': 'on' };
    const ko = await refused(await send('ko', '/dashboard/webhooks', form), 'webhook');
    expect(ko.reason).toBe(
      '주소의 호스트 127.0.0.1은 사설, 루프백 또는 예약된 주소(127.0.0.1)입니다. 웹훅은 공개 주소로만 보낼 수 있습니다.',
    );
    expect(ko.page).toContain('name="url" type="url" required maxlength="2000" value="http://127.0.0.1/x"');
    expect(ko.page).toContain('name="event:video.finished" checked>');
    expect(ko.page).toMatch(/name="event:balance\.threshold_crossed">/); // unticked stays unticked
    expect(ko.page).not.toContain('영문');
    const en = await refused(await send('en', '/dashboard/webhooks', form), 'webhook');
    expect(en.reason).toBe(
      'The URL’s host 127.0.0.1 is a private, loopback or reserved address (127.0.0.1); webhooks go to public addresses only.',
    );
  });

  it('a webhook to a name that resolves privately: refused in the page’s words, naming no address it resolved to', async () => {
    const form = { url: 'http://localhost/x', 'event:video.finished': 'on' };
    const ko = await refused(await send('ko', '/dashboard/webhooks', form), 'webhook');
    expect(ko.reason).toBe(
      '주소의 호스트 localhost는 게이트웨이가 보낼 수 있는 공개 주소가 아닙니다. 웹훅은 공개 주소로만 보낼 수 있습니다.',
    );
    const en = await refused(await send('en', '/dashboard/webhooks', form), 'webhook');
    expect(en.reason).toBe('The URL’s host localhost is not a public address the gateway can reach; webhooks go to public addresses only.');
    expect(en.page).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it('no event ticked: says to tick one, the address kept, nothing made', async () => {
    const ko = await refused(await send('ko', '/dashboard/webhooks', { url: 'https://hooks.example/x' }), 'webhook');
    expect(ko.reason).toBe('이 웹훅으로 보낼 이벤트를 하나 이상 고르세요.');
    expect(ko.page).toContain('value="https://hooks.example/x"');
    expect(ko.page).not.toMatch(/name="event:[^"]+" checked/);
    const en = await refused(await send('en', '/dashboard/webhooks', { url: 'https://hooks.example/x' }), 'webhook');
    expect(en.reason).toBe('Tick at least one event for this webhook.');
    const made = await t.gw.db.query('SELECT 1 FROM webhooks WHERE wallet_id = $1', [t.walletId]);
    expect(made.rows).toHaveLength(0);
  });

  it('a threshold out of range: the thresholds as typed, the field named by its label', async () => {
    const form = { balance_credits: '999000', credits_expiring_days: '400' };
    const ko = await refused(await send('ko', '/dashboard/webhooks/thresholds', form), 'thresholds');
    expect(ko.reason).toBe('‘사용 기한이 있는 크레딧: 며칠 전에 알림’에는 1부터 365까지의 정수 일수를 적으세요.');
    expect(ko.page).toContain('name="credits_expiring_days" value="400"');
    expect(ko.page).toContain('name="balance_credits" value="999000"');
    const percent = await refused(
      await send('ko', '/dashboard/webhooks/thresholds', { key_daily_limit_percent: '80, 2000' }),
      'thresholds',
    );
    expect(percent.reason).toBe('‘키: 일 한도의 퍼센트’: 2000은 1부터 1000까지의 정수 퍼센트가 아닙니다.');
    const en = await refused(await send('en', '/dashboard/webhooks/thresholds', form), 'thresholds');
    expect(en.reason).toBe('“Credits that expire: days before” takes a whole number of days from 1 to 365.');
  });
});

describe('a class that is not there', () => {
  it('is a not-found page in the page’s language', async () => {
    const res = await fetch(`${t.url}/dashboard/groups/grp_nope`, { headers: { cookie: `${owner.cookie}; lang=ko` } });
    expect(res.status).toBe(404);
    const page = await res.text();
    expect(page).toContain('이 지갑에서 찾을 수 없습니다.');
    expect(page).not.toContain('영문');
    expect(page).not.toContain('No key group');
  });
});

describe('refused class forms', () => {
  it('the create form, a class’s change form and its keys form come back filled in as typed, the reason beside each', async () => {
    const created = await send('en', '/dashboard/groups', { name: '3학년 2반', monthly_limit_credits: 'lots' });
    const create = await refused(created, 'group-new');
    expect(create.reason).toContain('&quot;lots&quot; is not an amount');
    expect(create.page).toContain('value="3학년 2반"');
    expect(create.page).toContain('name="monthly_limit_credits" value="lots"');

    const made = await send('en', '/dashboard/groups', { name: '3학년 3반' });
    expect(made.status).toBe(303);
    const id = createdClassId(made);
    const path = `/dashboard/groups/${encodeURIComponent(id)}`;
    const change = await refused(await send('ko', path, { name: '3학년 3반', daily_limit_credits: '1.5.5' }), `group-${id}`);
    expect(change.reason).toContain('1.5.5');
    expect(change.page).toContain('name="daily_limit_credits" value="1.5.5"');

    const keys = await refused(await send('en', `${path}/keys`, { count: '0', name: 'student' }), 'class-keys');
    expect(keys.reason.length).toBeGreaterThan(0);
    expect(keys.page).toContain('name="count" type="number" min="1" max="100" value="0"');
    expect(keys.page).toContain('name="name" maxlength="40" value="student"');
    const none = await t.gw.db.query('SELECT 1 FROM api_keys WHERE wallet_id = $1 AND group_id = $2', [t.walletId, id]);
    expect(none.rows).toHaveLength(0);
  });
});
