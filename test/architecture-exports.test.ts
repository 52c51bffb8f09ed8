// Every export of the product's code is imported somewhere: an export nobody imports is dead code, or a name
// that should not be exported. The scan (test/helpers/export-scan.ts) reads engine/, transforms/, simulator/
// and bin/, follows re-exports through each room's index.ts, and counts the imports of every file in the
// repository, tests and bench included; the second check then says which exports only tests or the bench
// import, and holds that list to the seams below, each with its reason.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unusedExports } from './helpers/export-scan.ts';

const ROOT = join(import.meta.dirname, '..');
const FOLDERS = ['engine', 'transforms', 'simulator', 'bin', 'bench', 'test'];
const CHECKED = /^(engine|transforms|simulator|bin)\//;

/** Files whose exports need no importer, and why. Entry points (engine/main.ts, engine/cli/cli.ts,
 * simulator/main.ts, bin/*.mjs) export nothing today, so they need no line here. */
const EXEMPT_FILES: Record<string, string> = {
  // Generated from the JSON Schemas (engine/catalog/generate-schema-types.ts): a type for every definition,
  // used or not, so the file stays exactly what the generator writes (test/core/schema-types.test.ts).
  'engine/core/schema-types.ts': 'generated',
};

/**
 * Exports that only test/ or bench/ import, on purpose: the seams the tests and the bench drive the code
 * through. Grouped by why; a name that stops being imported by them, or starts being imported by the
 * product, must leave this list.
 */
const TEST_SEAMS: Record<string, string[]> = {
  // The harness: test/helpers and bench/ open throwaway schemas, start a gateway in process with a fixed
  // clock, and run the ledger audit's query themselves.
  harness: [
    'engine/core/clock.ts: fixedClock',
    'engine/db/scratch-schema.ts: ScratchSchema',
    'engine/db/scratch-schema.ts: openScratchSchema',
    'engine/db/scratch-schema.ts: probePostgres',
    'engine/db/scratch-schema.ts: urlWithSchema',
    'engine/gateway.ts: GatewayOptions',
    'engine/money/audit.ts: LedgerCheck',
    'engine/money/audit.ts: LedgerExample',
    'engine/money/audit.ts: checkLedger',
    'engine/db/migrate.ts: MIGRATIONS_DIR',
    'engine/db/migrate.ts: loadMigrations',
    'engine/usage/records.ts: usageRecordWriter',
    // Usage records written as fixtures, outside any batch (the ledger groups a batch's rows itself).
    'engine/db/charge-rows.ts: writeChargeRows',
    'engine/usage/retention.ts: pruneUsageRecords',
    'engine/videos/index.ts: openVideoFiles',
    'engine/videos/store.ts: NewVideoJob',
    'engine/money/lease-wiring.ts: LeaseConfig',
    // The expiry pass run at a chosen instant, where a test moves the clock by hand instead of waiting for its timer.
    'engine/money/lot-expiry.ts: expireDueLots',
    // How long past an expiry the timer's pass waits, where a test moves the clock across it.
    'engine/money/lot-expiry.ts: TOLD_AFTER_MS',
    // The key-change channel, where a test plays a gateway process that listens and never confirms.
    'engine/keys/announce.ts: KEY_CHANNEL',
    // A webhook receiver's side of the signature: the tests' receivers check every delivery with it.
    'engine/alerts/signature.ts: verifySignature',
    // The catalog read without a running gateway, and the check the CLI runs, called in process.
    'engine/catalog/catalog.ts: loadCatalog',
    'engine/cli/catalog-cli.ts: checkCatalog',
    'engine/cli/catalog-cli.ts: reviewCatalog',
    'engine/catalog/generate-schema-types.ts: SCHEMA_TYPES_FILE',
    'engine/catalog/generate-schema-types.ts: generateSchemaTypes',
    // The simulator's answers built without HTTP, to price them against the catalog (test/catalog/pricing).
    'simulator/media.ts: PNG_1X1_BASE64',
    'simulator/media.ts: fakeMp4',
    // The most a simulated vendor may bill for a body, against the hold (test/calls/hold-covers-largest-usage).
    'simulator/largest-usage.ts: largestUsage',
  ],
  // Pure decisions tested case by case, where a round trip through a gateway could not reach every case.
  units: [
    'engine/alerts/address-guard.ts: isRefusedAddress',
    'engine/alerts/events.ts: withMoney',
    'engine/calls/route-loop.ts: RouteLoop',
    'engine/calls/route-loop.ts: parseRetryAfter',
    'engine/catalog/usage-cost.ts: costOfUsage',
    'engine/dashboard/amounts.ts: usdOfCredits',
    'engine/dashboard/amounts.ts: usdOfNano',
    'engine/dashboard/i18n.ts: fromAcceptLanguage',
    'engine/dashboard/i18n.ts: th',
    'engine/dashboard/oidc-flow-cookie.ts: openFlow',
    'engine/dashboard/oidc-flow-cookie.ts: sealFlow',
    'engine/dashboard/roles.ts: ROUTE_PERMISSIONS',
    'engine/db/data-folder-lock.ts: lockName',
    'engine/db/migrate.ts: migrationChecksum',
    'engine/db/pg-array.ts: arrayLiteral',
    'engine/http/unpaired-surrogates.ts: fieldWithUnpairedSurrogate',
    'engine/keys/index.ts: Audience',
    'engine/keys/index.ts: hashSecret',
    'engine/keys/index.ts: usedCredits',
    'engine/observe/routes.ts: mayReadMetrics',
    'engine/videos/request.ts: sizeOf',
    // The reload's log line, for SIGHUP and the admin route alike, checked line by line.
    'engine/admin/reload-route.ts: logReload',
    // A door's caller refusals (config/callers.yaml) apart from its model's, as the audience rules' unit test runs them.
    'engine/calls/refusals.ts: callerRefusals',
  ],
  // What a wire format's folder builds its declarations with, where no shipped format needs it yet: only the
  // toy format of test/calls/toy-protocol/ declares an error body of the {error: {…}} kind beside the gateway's own.
  formats: ['engine/core/errors.ts: errorFieldSchema'],
  // Constants the tests size their inputs by or wait on, so a change of the figure does not leave them
  // testing something else.
  figures: [
    'engine/db/pglite.ts: EMBEDDED_SHARED_BUFFERS',
    'engine/money/lease-wiring.ts: LEASE_RETURN_CHANNEL',
    'engine/telemetry/config.ts: DEFAULT_SERVICE_NAME',
    'transforms/util/estimate.ts: IMAGE_TOKENS_ESTIMATE',
    'transforms/util/token-count.ts: EXACT_COUNT_MAX_CHARS',
  ],
};

const checked = (f: string) => CHECKED.test(f) && !(f in EXEMPT_FILES);
const product = (f: string) => !/^(test|bench)\//.test(f);

describe('exports', () => {
  it('every export of engine/, transforms/, simulator/ and bin/ is imported by some file', () => {
    expect(unusedExports(ROOT, FOLDERS, checked)).toEqual([]);
  });

  it('the exports only tests and the bench import are the seams listed above', () => {
    const unused = new Set(unusedExports(ROOT, FOLDERS, checked));
    const onlyTests = unusedExports(ROOT, FOLDERS, checked, product).filter((x) => !unused.has(x));
    expect(onlyTests).toEqual(Object.values(TEST_SEAMS).flat().sort());
  });
});
