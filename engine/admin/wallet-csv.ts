// The district overview as CSV, one line per wallet. It is for spreadsheets as much as people, so English column
// names, ISO instants and plain numbers, whatever the operator's display currency.

import { type DisplayCurrency, NANO_PER_CREDIT, nanoToDisplayUnits, type Rounding } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import { csvCell } from '../http/csv-cell.ts';
import { listWallets, parseWalletPageRequest } from './wallet-list.ts';
import type { WalletView } from './wallet-view.ts';

/** The most wallets one file holds; past it the file says so on its last line rather than growing without end. */
const MAX_ROWS = 20_000;

const dollars = (credits: number) => {
  const c = BigInt(credits);
  return `${c / 1_000_000n}.${(c % 1_000_000n).toString().padStart(6, '0')}`;
};

function columns(currency: DisplayCurrency | null): { name: string; cell: (v: WalletView) => string | number | null }[] {
  const code = currency?.code.toLowerCase();
  const units = (credits: number, rounding: Rounding) =>
    currency ? nanoToDisplayUnits(BigInt(credits) * NANO_PER_CREDIT, currency, rounding).toString() : null;
  const money = (name: string, credits: (v: WalletView) => number, rounding: Rounding) => [
    ...(currency ? [{ name: `${name}_${code}`, cell: (v: WalletView) => units(credits(v), rounding) }] : []),
    { name: `${name}_usd`, cell: (v: WalletView) => dollars(credits(v)) },
    { name: `${name}_credits`, cell: credits },
  ];
  return [
    { name: 'id', cell: (v) => v.id },
    { name: 'name', cell: (v) => v.name },
    ...money('balance', (v) => v.credits, 'down'),
    ...money('month_spent', (v) => v.month_spent_credits, 'up'),
    { name: 'keys_active', cell: (v) => v.keys_active },
    { name: 'key_slots', cell: (v) => v.key_slots },
    { name: 'last_call_at', cell: (v) => v.last_call_at },
    { name: 'owner_id', cell: (v) => v.owner_id },
    { name: 'created_at', cell: (v) => v.created_at },
  ];
}

/** Every wallet as CSV; `query` as the list takes it (its `sort`; `limit` and `cursor` are the file's own paging). */
export async function walletsCsv(db: Db, query: { sort?: unknown }, today: string, currency: DisplayCurrency | null): Promise<string> {
  const cols = columns(currency);
  const lines = [cols.map((c) => c.name).join(',')];
  let cursor: string | undefined;
  do {
    const page = await listWallets(db, parseWalletPageRequest({ sort: query.sort, limit: '200', cursor }), today, currency);
    for (const v of page.data) lines.push(cols.map((c) => csvCell(c.cell(v))).join(','));
    cursor = page.next_cursor ?? undefined;
  } while (cursor && lines.length <= MAX_ROWS);
  if (cursor) lines.push(csvCell(`# more than ${MAX_ROWS} wallets: page through GET /admin/v1/wallets for the rest`));
  return `${lines.join('\r\n')}\r\n`;
}
