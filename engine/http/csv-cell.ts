// One cell of a CSV download (RFC 4180), for every room that offers one (the dashboard's usage, the admin
// API's wallet overview). Strings are people's input (key and wallet names): one a spreadsheet would read as
// a formula (= + - @ at the start) gets a leading apostrophe, so opening the file runs nothing.
export function csvCell(v: string | number | null): string {
  if (v === null) return '';
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
