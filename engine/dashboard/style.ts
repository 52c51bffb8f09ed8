// The dashboard's one stylesheet, ours: system fonts, calm neutral colours that follow the system's light or
// dark scheme, roomy tables and forms; nothing loaded from elsewhere (the CSP allows only this inline sheet).
// The font list names the Korean system fonts of Mac and Windows too, so Korean pages read well on both.
export const DASHBOARD_STYLE = `
:root { color-scheme: light dark; --ink: #1d2430; --muted: #5b6574; --line: #d9dee6; --panel: #f6f8fb; --accent: #2f5fb3; --bg: #fff;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Apple SD Gothic Neo", "Malgun Gothic", "Noto Sans KR", sans-serif; line-height: 1.5; color: var(--ink); background: var(--bg); }
@media (prefers-color-scheme: dark) { :root { --ink: #e4e8ee; --muted: #a3adbb; --line: #39414d; --panel: #1d232c; --accent: #8fb3f0; --bg: #12161c; } }
body { margin: 0; }
/* Korean breaks lines between words, not inside them (a table heading of two words must not stack syllables). */
:lang(ko) { word-break: keep-all; }
a { color: var(--accent); }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .5rem; }
header { display: flex; flex-wrap: wrap; gap: .5rem 1.25rem; align-items: center; padding: .75rem 1.25rem; border-bottom: 1px solid var(--line); background: var(--panel); }
header nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: 0; }
header nav a { text-decoration: none; }
header nav a[aria-current="page"] { font-weight: 700; color: var(--ink); border-bottom: 2px solid var(--accent); }
header form.lang { margin-left: auto; }
.lang button { background: transparent; color: var(--accent); border-color: var(--line); }
.summary { display: flex; flex-wrap: wrap; gap: .25rem 1.5rem; align-items: baseline; margin: 0; padding: .5rem 1.25rem; border-bottom: 1px solid var(--line); }
.summary small { color: var(--muted); }
.summary a { margin-left: auto; }
main { padding: 1rem 1.25rem 3rem; max-width: 80rem; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
caption { text-align: left; color: var(--muted); padding: .25rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .4rem .7rem; text-align: left; vertical-align: top; }
th { font-weight: 600; background: var(--panel); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 1rem 0; max-width: 40rem; min-width: 0; background: var(--panel); }
label { display: block; margin: .5rem 0 .15rem; }
input, select, button { font: inherit; max-width: 100%; box-sizing: border-box; }
input, select { padding: .3rem .45rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--ink); }
button { padding: .35rem .9rem; border: 1px solid var(--accent); border-radius: 6px; background: var(--accent); color: var(--bg); cursor: pointer; }
details summary { cursor: pointer; color: var(--accent); }
small { color: var(--muted); }
.secret { font-family: ui-monospace, monospace; word-break: break-all; background: var(--panel); padding: .2rem .4rem; }
.notice, .ok, .error { border-left: 4px solid; border-radius: 4px; padding: .5rem .8rem; }
.notice { border-color: #c80; background: #cc88001a; }
.ok { border-color: #2a8a4a; background: #2a8a4a1a; }
.error { border-color: #c33; background: #cc33331a; }
/* At phone width the page never scrolls sideways: wide tables and the chart scroll inside their own box. A table
   keeps readable columns: each as wide as its cells' words on one line, never a key prefix or a date squeezed
   into a column of letters; a long text (a sentence, a user agent, a change form) wraps inside a box of its own. */
.scroll { overflow-x: auto; max-width: 100%; }
.scroll > table { width: max-content; }
td code, td .secret { overflow-wrap: normal; word-break: normal; }
td .wrap, td details { display: block; max-width: 22rem; white-space: normal; } td small.wrap { max-width: 14rem; }
figure { margin: 1rem 0; }
.chart { display: block; width: 100%; min-width: 480px; max-width: 760px; height: auto; }
main code { overflow-wrap: anywhere; }
.usd { white-space: nowrap; }
/* Money in a table cell (a use against its limit, a lot's credits): it wraps, and its credits go under it, so tables fit a laptop. */
.used { display: block; max-width: 11rem; margin-left: auto; }
.credits { display: block; white-space: nowrap; }
.legend svg { margin-left: .6em; }
.legend .entry { white-space: nowrap; } /* a key's name never breaks across lines */
@media (max-width: 40rem) { main { padding: .75rem .75rem 2rem; } header, .summary { padding: .5rem .75rem; } }
`;
