// Everything checked across files, in one place, so start, reload and `npx gateway catalog check` refuse
// the same YAML for the same reasons (each file's own schema is checked as it is read), and warn of the
// same likely mistakes.
import { koreanDate } from '../core/clock.ts';
import type { LoadedCatalog } from './catalog.ts';
import type { LoadedConfig } from './config.ts';
import { doorProblems, modelRuleProblems } from './door-checks.ts';
import { doorReferenceProblems } from './door-references.ts';
import { modelProblems } from './model-checks.ts';
import { type CatalogWarning, modelWarnings } from './model-warnings.ts';
import { vendorReferenceProblems } from './vendor-references.ts';

/** Problems as `file:line: reason`; empty when config and catalog can serve together. */
export function snapshotProblems(config: LoadedConfig, catalog: LoadedCatalog): string[] {
  const cfg = config.config;
  const models = catalog.catalog.models;
  return [
    ...catalog.problems,
    ...doorProblems(cfg, config.at.doors, config.at.billing),
    ...doorReferenceProblems(config, catalog.catalog, catalog.broken),
    ...vendorReferenceProblems(config),
    ...modelProblems(models, catalog.at, cfg, catalog.broken),
    // A model is named by its `rules:` line: the list that asks for the effects the door would skip.
    ...modelRuleProblems(cfg, models.values(), config.at.doors, (m) => catalog.at(m, ['rules'])),
  ];
}

/** Likely mistakes as of `now` (dates that have come, prices out of range): printed, never refused. */
export function snapshotWarnings(catalog: LoadedCatalog, now: Date): CatalogWarning[] {
  return modelWarnings(catalog.catalog.models.values(), catalog.at, koreanDate(now));
}
