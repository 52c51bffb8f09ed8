// `gateway catalog check [--strict]` and `gateway catalog diff <ref>`.
import { parseDocument } from 'yaml';
import { diffCatalogs, diffRules, doorsServingIn, rawModels, rawRules } from '../catalog/catalog-diff.ts';
import { renderDiffTable } from '../catalog/diff-table.ts';
import { type CatalogWarning, formatWarning } from '../catalog/model-warnings.ts';
import { loadSnapshot } from '../catalog/runtime.ts';
import { ConfigFileError } from '../catalog/yaml-file.ts';
import { CatalogDiffError, type ReviewedFiles, readReviewSides } from './catalog-at-ref.ts';

export interface CatalogDirs {
  config: string;
  catalog: string;
}

interface CheckOptions {
  /** Dates that have come (sale ends, scheduled prices) are problems, not warnings. */
  strict?: boolean;
  /** The instant dates are compared with. */
  now?: Date;
}

interface CatalogReview {
  /** `file:line: reason`: the catalog would not start. */
  problems: string[];
  /** Likely mistakes that do not stop a start (none while there are problems: those come first). */
  warnings: CatalogWarning[];
}

export function reviewCatalog(dirs: CatalogDirs, opts: CheckOptions = {}): CatalogReview {
  let warnings: readonly CatalogWarning[];
  try {
    warnings = loadSnapshot(dirs, 1, opts.now).warnings;
  } catch (e) {
    if (e instanceof ConfigFileError) return { problems: e.problems, warnings: [] };
    return { problems: [(e as Error).message], warnings: [] };
  }
  const refused = opts.strict ? warnings.filter((w) => w.pastDate) : [];
  return {
    problems: refused.map((w) => `${w.at}: ${w.message}`),
    warnings: warnings.filter((w) => !refused.includes(w)),
  };
}

/** Problems as `file:line: reason`, empty when the catalog and config are sound. */
export function checkCatalog(dirs: CatalogDirs, opts: CheckOptions = {}): string[] {
  return reviewCatalog(dirs, opts).problems;
}

/** `gateway catalog …`: the exit code, or undefined when the arguments are no catalog command (the caller prints usage). */
export function runCatalogCommand(command: string | undefined, args: string[], dirs: CatalogDirs): number | undefined {
  if (command === 'check' && args.every((a) => a === '--strict')) {
    const { problems, warnings } = reviewCatalog(dirs, { strict: args.includes('--strict') });
    for (const p of problems) console.error(p);
    for (const w of warnings) console.error(formatWarning(w));
    const counted = warnings.length ? ` (${warnings.length} warning${warnings.length > 1 ? 's' : ''})` : '';
    if (problems.length === 0) console.log(`catalog and config are valid${counted}: ${dirs.catalog}, ${dirs.config}`);
    return problems.length ? 1 : 0;
  }
  if (command === 'diff' && args.length === 1) {
    try {
      process.stdout.write(diffAgainstRef(args[0]!, dirs));
      return 0;
    } catch (e) {
      if (!(e instanceof CatalogDiffError)) throw e;
      console.error(e.message);
      return 1;
    }
  }
  return undefined;
}

/** The Markdown table of reviewed changes between a git ref and the working tree. */
function diffAgainstRef(ref: string, dirs: CatalogDirs): string {
  const { before, after } = readReviewSides(ref, dirs);
  assertYaml(`the catalog at '${ref}'`, before);
  assertYaml('the working tree', after);
  // Doors are resolved on both sides or on neither (config/ outside the repository has no past), or every
  // model without a doors line would show a change.
  const resolveDoors = before.doors !== undefined && after.doors !== undefined;
  const models = (side: ReviewedFiles) => rawModels(side.catalog, resolveDoors ? doorsServingIn(side.doors!) : undefined);
  const rows = diffCatalogs(models(before), models(after));
  if (before.rules !== undefined && after.rules !== undefined) rows.push(...diffRules(rawRules(before.rules), rawRules(after.rules)));
  return renderDiffTable(rows);
}

/** A file that is not YAML at all stops the diff with its name and line, in one sentence. */
function assertYaml(side: string, files: ReviewedFiles): void {
  const texts = [...files.catalog, { name: 'doors.yaml', text: files.doors ?? '' }, { name: 'rules.yaml', text: files.rules ?? '' }];
  for (const { name, text } of texts) {
    const error = parseDocument(text).errors[0];
    if (error) throw new CatalogDiffError(`in ${side}, ${name} is not valid YAML: ${error.message.split('\n')[0]!.replace(/:$/, '')}.`);
  }
}
