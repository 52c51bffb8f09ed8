// `npx gateway …`: catalog review tools and the operator's wallet commands.
import { runCatalogCommand } from './catalog-cli.ts';
import { catalogFolders, missingFolder } from './catalog-folders.ts';

const USAGE = `usage:
  gateway catalog check [--strict]      validate catalog/ and config/ (exit 1 with file:line on every problem;
                                        warnings exit 0, and with --strict a date that has come exits 1); from
                                        any folder: those of the nearest folder above with both, else this one's
  gateway catalog diff <git-ref>        Markdown table of every model, price (with unit and percentage), rule and
                                        door change since <git-ref> (docs/catalog-review.md)
  gateway wallet create [--credits N] [--splits-usage] [--key-slots N] [--owner ID] [--name NAME]
  gateway wallet rename <wallet-id> --name NAME   a school's name for the wallet ('' for none)
  gateway wallet topup <wallet-id> --credits N [--vendors c,d] [--expires-at ISO] [--label NAME]   N: credits, dollars
                                        ('$5') or, with billing.yaml's display_currency, won ('₩7000');
                                        ISO: when the lot expires, e.g. 2027-02-28T23:59:59+09:00
  gateway wallet show <wallet-id>
  gateway wallet list [--limit N] [--cursor C] [--sort S] [--csv]   the overview: name, balance, this
                                        month's spend, active keys, last call; oldest first, or --sort name,
                                        credits, month_spent, last_call_at, keys_active (--sort=-month_spent: largest
                                        first); N from 1 to 200 (default 50); the next page: --cursor with
                                        next_cursor of the last one; --csv: every wallet as CSV
  gateway wallet owner <wallet-id> <owner-id>    closes the management keys earlier owners made, and says which
  gateway wallet sign-in-link <wallet-id>   a one-time link (15 min) that signs the owner in to /dashboard
  gateway key create <wallet-id> [--name NAME]   an API key for the wallet, printed this once
  gateway management-key create <wallet-id> [--name NAME]
  gateway management-key list <wallet-id>        every management key, active or closed (never the secret)
  gateway management-key close <wallet-id> <key-id>   the key stops working at once
  gateway reload [--url URL [--token T]]   reload the running gateway's catalog and config (SIGHUP to the pid in
                                        GATEWAY_DATA_DIR/gateway.pid, or POST /admin/v1/reload at URL); waits for
                                        the result, and exits 1 listing the problems when it was refused
Environment: GATEWAY_CONFIG_DIR, GATEWAY_CATALOG_DIR, DATABASE_URL, GATEWAY_DATA_DIR (as for npm start).
On the embedded database the wallet and key commands go through the running gateway (its data folder's
gateway.json); when it cannot be reached they write nothing and exit 1. Every change a command makes is
recorded in the wallet's audit trail as the operator 'cli'.`;

/** check finds the project from any folder; diff compares the working tree of the folder it runs in (git's). */
function catalogDirsFor(command: string | undefined) {
  if (command === 'check') return catalogFolders(process.env);
  return { config: process.env.GATEWAY_CONFIG_DIR ?? './config', catalog: process.env.GATEWAY_CATALOG_DIR ?? './catalog' };
}

async function main(argv: string[]): Promise<number> {
  const [group, command, ...rest] = argv;
  if (group === 'catalog') {
    const dirs = catalogDirsFor(command);
    const missing = command === 'check' ? missingFolder(dirs) : undefined;
    if (missing) {
      console.error(missing);
      return 1;
    }
    const code = runCatalogCommand(command, rest, dirs);
    if (code !== undefined) return code;
  }
  if (group === 'reload') return (await import('./reload.ts')).runReloadCommand([command, ...rest].filter((a) => a !== undefined));
  if (group === 'wallet' || group === 'management-key' || group === 'key') {
    // Loaded only here: the catalog commands need no database.
    const { runWalletCommand } = await import('./wallet-cli.ts');
    return runWalletCommand(group, command, rest);
  }
  console.error(USAGE);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error((e as Error).message);
    process.exit(1);
  },
);
