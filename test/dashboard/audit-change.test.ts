// An audit entry's change as the dashboard says it: a line per field in the page's words, the unit said once
// across an arrow, a key made listing only what was set, a field both sides share said once, and a field the
// page has no words for still shown by its name, so nothing recorded is hidden.
import { describe, expect, it } from 'vitest';
import { changeText, groupIdsIn } from '../../engine/dashboard/audit-change.ts';
import { uiOf } from '../../engine/dashboard/i18n.ts';

const [ko, en] = [uiOf('ko'), uiOf('en')];
const lines = (ui: typeof ko, before: unknown, after: unknown) =>
  changeText(ui, { before, after })
    .text.replace(/^<span class="wrap">|<\/span>$/g, '')
    .split('<br>');

describe('an audit change in words', () => {
  it('a limit changed: the field, old → new, the unit once; none for no limit', () => {
    expect(lines(ko, { monthly_limit_credits: 300 }, { monthly_limit_credits: 30 })).toEqual(['월 한도 300 → 30 크레딧']);
    expect(lines(en, { monthly_limit_credits: 300 }, { monthly_limit_credits: 30 })).toEqual(['Monthly limit 300 → 30 credits']);
    expect(lines(ko, { daily_limit_credits: null }, { daily_limit_credits: 1_000_000 })).toEqual(['일 한도 없음 → 1,000,000 크레딧']);
    expect(lines(ko, { expires_on: '2026-12-31' }, { expires_on: null })).toEqual(['마지막 사용일 2026. 12. 31. → 없음']);
  });

  it('with a display currency, credits are also said in whole won after the line, rounded down', () => {
    const won = uiOf('ko', { code: 'KRW', per_usd: 1400 });
    expect(lines(won, { monthly_limit_credits: 300 }, { monthly_limit_credits: 5_000_000 })).toEqual([
      '월 한도 300 → 5,000,000 크레딧 (&lt;₩1 → ₩7,000)',
    ]);
    expect(lines(won, { daily_limit_credits: null }, { daily_limit_credits: 1_234_567 })).toEqual([
      '일 한도 없음 → 1,234,567 크레딧 (없음 → ₩1,728)',
    ]);
    expect(lines(won, null, { credits: 357_142_858 })).toEqual(['충전량 357,142,858 크레딧 (₩500,000)']);
    expect(lines(won, { name: 'a' }, { name: 'b' })).toEqual(['이름 a → b']);
  });

  it('a key made lists what was set, in the page’s order, leaving out the defaults', () => {
    const made = {
      models: null,
      name: '수학반',
      audience: 'student',
      key_prefix: 'sk-svc-Ab12…',
      expires_on: null,
      monthly_limit_credits: 300,
    };
    expect(lines(ko, null, made)).toEqual(['이름 수학반', '키 sk-svc-Ab12…', '대상 학생', '월 한도 300 크레딧']);
  });

  it('stored words in words; what both sides share said once; lists and percents', () => {
    expect(lines(ko, { identity: 'erin', role: 'viewer' }, { identity: 'erin', role: 'manager' })).toEqual([
      '계정 erin',
      '역할 조회자 → 관리자',
    ]);
    expect(lines(ko, { status: 'active', name: 'class 2' }, { status: 'closed', reason: 'slot_race' })).toEqual([
      '이름 class 2',
      '상태 사용 중 → 닫힘',
      '이유 빈 키 슬롯 없음',
    ]);
    expect(lines(ko, null, { credits: 5_000_000, vendors: ['c'] })).toEqual(['충전량 5,000,000 크레딧', '사용 범위 공급사 C 전용']);
    expect(lines(ko, null, { url: 'https://x.example/hook', events: ['video.finished'] })).toEqual([
      '주소 https://x.example/hook',
      '이벤트 동영상 작업이 끝남',
    ]);
    expect(lines(ko, { balance_credits: [] }, { balance_credits: [999_000] })).toEqual(['잔액: 크레딧 꺼짐 → 999,000 크레딧']);
    expect(lines(ko, { key_daily_limit_percent: [80] }, { key_daily_limit_percent: [] })).toEqual(['키: 일 한도의 퍼센트 80% → 꺼짐']);
  });

  it('a class by its name (never its id), a lot’s expiry in Korean time', () => {
    const names = new Map([['grp_a', '3학년 2반']]);
    const made = { name: '3-2 1', group_id: 'grp_a' };
    expect(changeText(ko, { before: null, after: made }, names).text).toContain('반 3학년 2반');
    expect(changeText(en, { before: null, after: made }, names).text).toContain('Class 3학년 2반');
    const moved = (to: string | null) => changeText(ko, { before: { group_id: 'grp_a' }, after: { group_id: to } }, names).text;
    expect(moved('grp_gone')).toBe('<span class="wrap">반 3학년 2반 → 찾을 수 없는 반</span>');
    expect(moved(null)).toBe('<span class="wrap">반 3학년 2반 → 없음</span>');
    const lot = { credits: 5_000_000, vendors: [], expires_at: '2026-12-01T05:10:09.000Z' };
    expect(lines(ko, null, lot)).toContain('사용 기한 2026. 12. 01. 14:10 KST');
    expect(lines(en, null, lot)).toContain('Expiry 2026-12-01 14:10 KST');
  });

  it("a teacher's classes by their names: the whole wallet before the first, none once all are taken", () => {
    const names = new Map([
      ['grp_a', '2학년 1반'],
      ['grp_b', '2학년 2반'],
    ]);
    const classes = (before: string[] | null, after: string[] | null) =>
      changeText(ko, { before: { groups: before }, after: { groups: after } }, names).text;
    expect(classes(null, ['grp_a'])).toBe('<span class="wrap">맡은 반 지갑 전체 관리 → 2학년 1반</span>');
    expect(classes(['grp_a'], ['grp_a', 'grp_b'])).toBe('<span class="wrap">맡은 반 2학년 1반 → 2학년 1반, 2학년 2반</span>');
    expect(classes(['grp_b'], [])).toBe('<span class="wrap">맡은 반 2학년 2반 → 없음</span>');
    expect(
      groupIdsIn({ action: 'manager.changed', target_id: 'lee', before: { groups: ['grp_a'] }, after: { groups: ['grp_b'] } }),
    ).toEqual(['grp_a', 'grp_b']);
    expect(groupIdsIn({ action: 'key_group.changed', target_id: 'grp_c', before: null, after: null })).toEqual(['grp_c']);
  });

  it('a field the page does not know keeps its name; nothing at all is a dash', () => {
    expect(lines(ko, null, { colour: 'blue' })).toEqual(['colour blue']);
    expect(changeText(ko, { before: null, after: null }).text).toBe('—');
  });
});
