// config/doors.yaml is the one list of doors. Every door name written elsewhere in config/ must be one of
// them, and every door must have what other files keep per door (a call timeout, a default model it serves).
import type { Catalog } from './catalog.ts';
import type { LoadedConfig } from './config.ts';
import { didYouMean } from './nearest-name.ts';

/** `broken`: models written but failed their schema (already a problem each), so not named again here. */
export function doorReferenceProblems({ config, at }: LoadedConfig, catalog: Catalog, broken: ReadonlySet<string> = new Set()): string[] {
  const problems: string[] = [];
  const doors = config.doors;
  // Own keys only: a door called `constructor` is no door.
  const isDoor = (name: string) => Object.hasOwn(doors, name);
  const timeouts = config.limits.call_timeout_ms;
  for (const name of Object.keys(timeouts)) {
    if (!isDoor(name))
      problems.push(
        `${at.limits(['call_timeout_ms', name])}: call_timeout_ms names door '${name}', which config/doors.yaml does not define`,
      );
  }
  for (const name of Object.keys(doors)) {
    if (!Object.hasOwn(timeouts, name)) problems.push(`${at.limits(['call_timeout_ms'])}: call_timeout_ms has no entry for door '${name}'`);
  }
  for (const [rule, def] of Object.entries(config.rules)) {
    (def.doors ?? []).forEach((name, i) => {
      if (!isDoor(name))
        problems.push(`${at.rules([rule, 'doors', i])}: rule '${rule}' names door '${name}', which config/doors.yaml does not define`);
    });
  }
  config.callers.refuse.forEach((refusal, i) => {
    (refusal.doors ?? []).forEach((name, j) => {
      if (!isDoor(name))
        problems.push(
          `${at.callers(['refuse', i, 'doors', j])}: caller refusal names door '${name}', which config/doors.yaml does not define`,
        );
    });
  });
  for (const door of Object.values(doors)) {
    if (!door.default_model || broken.has(door.default_model)) continue;
    const model = catalog.models.get(door.default_model);
    if (!model?.doors.includes(door.name)) {
      const why = model
        ? 'a model it does not serve'
        : `a model the catalog does not define${didYouMean(door.default_model, catalog.models.keys())}`;
      problems.push(`${at.doors([door.name, 'default_model'])}: door '${door.name}' defaults to '${door.default_model}', ${why}`);
    }
  }
  return problems;
}
