// Turns what ajv reports into one sentence per mistake, placed on the line of the offending field.
// Left raw, one bad value yields several lines, some on the model's first line ("must match "then"
// schema", "must match exactly one schema in oneOf"), and a misspelt field names no fix.
import type { ErrorObject } from 'ajv';
import { didYouMean } from './nearest-name.ts';

type Path = (string | number)[];
type SchemaNode = Record<string, unknown>;

interface SchemaErrorContext {
  file: string;
  data: unknown;
  lineOf(path: Path): number;
}

/** `file:line: reason` for each mistake ajv found (errors need ajv's `verbose` option for the best wording). */
export function describeSchemaErrors(errors: ErrorObject[], ctx: SchemaErrorContext): string[] {
  const out = new Set<string>();
  for (const e of oneErrorPerValueRule(withoutEchoes(errors))) {
    const conditional = conditionalOf(e, errors);
    const { path, reason } = describe(e, ctx, conditional);
    const description = conditional?.description;
    const why = typeof description === 'string' ? ` (${description.replace(/\.$/, '')})` : '';
    out.add(`${ctx.file}:${ctx.lineOf(path)}: ${reason}${why}`);
  }
  return [...out];
}

/**
 * Drops the errors that only repeat another one: the "must match then/else schema" summary of a
 * conditional (its branch says what is wrong), and a oneOf's summary and its "must be null" branch when
 * another branch says what is wrong with the value. When every branch only disagrees on the type, the
 * branches become one "must be null or string".
 */
function withoutEchoes(errors: ErrorObject[]): ErrorObject[] {
  const dropped = new Set<ErrorObject>();
  const merged = new Map<ErrorObject, ErrorObject>();
  errors.forEach((e, i) => {
    if (e.keyword === 'if') dropped.add(e);
    if (e.keyword !== 'oneOf' && e.keyword !== 'anyOf') return;
    const branches = branchErrors(errors, i);
    if (branches.length === 0) return;
    const typeOnly = branches.filter((b) => b.keyword === 'type' && b.instancePath === e.instancePath);
    const telling = branches.filter((b) => !typeOnly.includes(b));
    typeOnly.forEach((b) => dropped.add(b));
    if (telling.length > 0) {
      dropped.add(e);
    } else {
      const types = [...new Set(typeOnly.flatMap((b) => [(b.params as { type: string | string[] }).type].flat()))];
      merged.set(e, { ...e, keyword: 'type', message: `must be ${types.join(' or ')}` });
    }
  });
  return errors.filter((e) => !dropped.has(e)).map((e) => merged.get(e) ?? e);
}

/**
 * A bad value breaks the field's own rule and, often, a conditional's stricter one of the same kind ("must be
 * integer" and "must be integer,null" for a text model's context window; two minimums for its max output): one
 * line says it, the conditional's, whose description says why. Rules that name another field (a missing or an
 * unknown one) are not merged: each names a different field.
 */
function oneErrorPerValueRule(errors: ErrorObject[]): ErrorObject[] {
  const kept = new Map<string, ErrorObject>();
  const keyOf = (e: ErrorObject) => (VALUE_RULES.has(e.keyword) ? `${e.instancePath}\0${e.keyword}` : undefined);
  for (const e of errors) {
    const key = keyOf(e);
    if (key === undefined) continue;
    const first = kept.get(key);
    if (!first || (!isConditional(first) && isConditional(e))) kept.set(key, e);
  }
  return errors.filter((e) => {
    const key = keyOf(e);
    return key === undefined || kept.get(key) === e;
  });
}

const VALUE_RULES = new Set([
  'type',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'enum',
  'const',
  'format',
  'multipleOf',
]);

const isConditional = (e: ErrorObject) => /\/(then|else)\//.test(e.schemaPath);

/**
 * The errors of a oneOf's branches: ajv lists them just before the oneOf's own error, at or under its
 * value. (Their schema paths do not say so: a branch that is a `$ref` reports the referenced path.)
 */
function branchErrors(errors: ErrorObject[], oneOfIndex: number): ErrorObject[] {
  const at = errors[oneOfIndex]!.instancePath;
  const out: ErrorObject[] = [];
  for (let i = oneOfIndex - 1; i >= 0 && isAtOrUnder(errors[i]!.instancePath, at); i--) out.unshift(errors[i]!);
  return out;
}

const isAtOrUnder = (path: string, parent: string) => path === parent || path.startsWith(`${parent}/`);

function describe(e: ErrorObject, ctx: SchemaErrorContext, conditional: SchemaNode | undefined): { path: Path; reason: string } {
  const path = e.instancePath.split('/').slice(1).map(unescapePointer);
  const where = e.instancePath || '(top)';
  switch (e.keyword) {
    case 'additionalProperties': {
      const extra = (e.params as { additionalProperty: string }).additionalProperty;
      const known = Object.keys((e.parentSchema?.properties as SchemaNode | undefined) ?? {});
      return { path: [...path, extra], reason: `unknown field '${extra}' at ${where}${didYouMean(extra, known)}` };
    }
    case 'required': {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      return { path: triggerOf(conditional, ctx.data, path) ?? path, reason: `missing field '${missing}' at ${where}` };
    }
    case 'enum': {
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues;
      const hint = typeof e.data === 'string' ? didYouMean(e.data, allowed.map(String)) : '';
      return { path, reason: `${where} ${e.message ?? 'is invalid'} (${allowed.join(', ')})${hint}` };
    }
    case 'pattern': {
      const description = e.parentSchema?.description;
      const what = typeof description === 'string' ? `is not ${lowerFirst(description)}` : (e.message ?? 'is invalid');
      return { path, reason: `${where} '${String(e.data)}' ${what}` };
    }
    default:
      return { path, reason: `${where} ${e.message ?? 'is invalid'}` };
  }
}

/**
 * The conditional (`if`/`then` with its description) an error's rule comes from. ajv reports a failed
 * conditional as an `if` error whose schema is the conditional itself, at the value it applies to.
 */
function conditionalOf(e: ErrorObject, errors: ErrorObject[]): SchemaNode | undefined {
  const at = e.schemaPath.lastIndexOf('/then/');
  if (at < 0) return undefined;
  const ifPath = `${e.schemaPath.slice(0, at)}/if`;
  const candidates = errors.filter((c) => c.keyword === 'if' && c.schemaPath === ifPath && isAtOrUnder(e.instancePath, c.instancePath));
  const nearest = candidates.sort((a, b) => b.instancePath.length - a.instancePath.length)[0];
  return nearest?.parentSchema;
}

/**
 * A field required only because another field holds some value (a successor because of `sale_ends`,
 * a context window because of `kind: text`) is missing from no line of its own: the line of the field
 * that requires it is the one to look at.
 */
function triggerOf(conditional: SchemaNode | undefined, data: unknown, path: Path): Path | undefined {
  const required = ((conditional?.if as SchemaNode | undefined)?.required as string[] | undefined) ?? [];
  const holder = valueAt(data, path);
  const present = required.find((k) => holder !== null && typeof holder === 'object' && Object.hasOwn(holder, k));
  return present === undefined ? undefined : [...path, present];
}

function valueAt(data: unknown, path: Path): unknown {
  let node = data;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[String(key)];
  }
  return node;
}

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);

const unescapePointer = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');
