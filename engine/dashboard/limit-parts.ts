// What the keys and classes pages both show of a daily or monthly limit: the field's label, and use against it.
import { moneyOver } from './amounts.ts';
import { type Html, html } from './html.ts';
import type { Ui } from './i18n.ts';

export const amountLabel = (ui: Ui, field: 'keys.field.monthly' | 'keys.field.daily') =>
  ui.t('keys.field.amount', { label: ui.t(field), hint: ui.t(ui.currency ? 'keys.field.amount_hint_won' : 'keys.field.amount_hint') });

/** Use against a limit in credits and in money, the limit beside it when there is one ("0 of 1,000,000", "0 (no limit)"). */
function usedOf(ui: Ui, used: number, limit: number | null): { credits: string; money: string } {
  if (limit === null) return { credits: ui.t('keys.no_limit', { used: ui.credits(used) }), money: ui.moneyOfCredits(used, 'up') };
  return {
    credits: ui.t('keys.used_of', { used: ui.credits(used), limit: ui.credits(limit) }),
    money: ui.t('keys.used_of', { used: ui.moneyOfCredits(used, 'up'), limit: ui.moneyOfCredits(limit, 'up') }),
  };
}

/**
 * Use against a limit as every page shows it (moneyOver): won first with the shipped display currency, and a
 * limit used up said in words, so a teacher sees at a glance which student's key stopped and why.
 */
export function usedText(ui: Ui, used: number, limit: number | null, creditsId?: string): Html {
  const { money, credits } = usedOf(ui, used, limit);
  const shown = moneyOver(money, credits, creditsId);
  return limit !== null && used >= limit ? html`${shown} <strong data-testid="reached">${ui.t('keys.reached')}</strong>` : shown;
}
