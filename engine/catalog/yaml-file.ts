// Reads one YAML file, checks it against its JSON Schema, and reports problems as
// `file:line: reason` so an operator can go straight to the line.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { type Document, isMap, isSeq, LineCounter, type Node, parseDocument } from 'yaml';
import { describeSchemaErrors } from './schema-errors.ts';

export class ConfigFileError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigFileError';
    this.problems = problems;
  }
}

/**
 * A file that is YAML but fails its schema. It still carries what it holds and which values failed (JSON
 * pointers), so the parts no error touches can be checked too: one run lists every problem, not one class.
 */
export class SchemaFileError<T = unknown> extends ConfigFileError {
  constructor(
    problems: string[],
    readonly loaded: LoadedYaml<T>,
    readonly failedPaths: string[],
  ) {
    super(problems);
    this.name = 'SchemaFileError';
  }
}

/** Where a value sits, as `file:line`, by its path of keys from the document root. */
export type Locate = (path: (string | number)[]) => string;

export interface LoadedYaml<T> {
  file: string;
  data: T;
  /** The 1-based line of a value, by its path of keys from the document root. */
  lineOf(path: (string | number)[]): number;
  at: Locate;
}

// verbose: errors carry their schema and value, so a misspelt field can be matched against the valid ones.
const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
const compiled = new Map<string, ValidateFunction>();

function validatorFor(schemaFile: string): ValidateFunction {
  let validate = compiled.get(schemaFile);
  if (!validate) {
    addSiblingSchemas(dirname(schemaFile));
    const schema = JSON.parse(readFileSync(schemaFile, 'utf8')) as { $id?: string };
    validate = (schema.$id && ajv.getSchema(schema.$id)) || ajv.compile(schema);
    compiled.set(schemaFile, validate);
  }
  return validate;
}

/** Schemas may refer to each other by `$id` (the file name), so a folder's schemas are added together. */
function addSiblingSchemas(dir: string): void {
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.schema.json'))) {
    const schema = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { $id?: string };
    if (schema.$id && !ajv.getSchema(schema.$id)) ajv.addSchema(schema);
  }
}

/** Parses YAML text; throws ConfigFileError with file:line for syntax or schema problems. */
function parseYaml<T>(file: string, text: string, schemaFile?: string): LoadedYaml<T> {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const lineOf = (path: (string | number)[]) => lineOfPath(doc, lines, path);
  if (doc.errors.length > 0) {
    throw new ConfigFileError(doc.errors.map((e) => `${file}:${lines.linePos(e.pos[0]).line}: ${e.message.split('\n')[0]}`));
  }
  const data = doc.toJS() as T;
  const loaded: LoadedYaml<T> = { file, data, lineOf, at: (path) => `${file}:${lineOf(path)}` };
  if (schemaFile) {
    const validate = validatorFor(schemaFile);
    if (!validate(data)) {
      const found = validate.errors ?? [];
      throw new SchemaFileError(
        describeSchemaErrors(found, { file, data, lineOf }),
        loaded,
        found.map((e) => e.instancePath),
      );
    }
  }
  return loaded;
}

export function loadYaml<T>(file: string, schemaFile?: string): LoadedYaml<T> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigFileError([`${file}:1: cannot read (${(e as Error).message})`]);
  }
  return parseYaml<T>(file, text, schemaFile);
}

function lineOfPath(doc: Document, lines: LineCounter, path: (string | number)[]): number {
  let node: unknown = doc.contents;
  let line = node && (node as Node).range ? lines.linePos((node as Node).range![0]).line : 1;
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => String((p.key as { value?: unknown })?.value ?? p.key) === String(key));
      if (!pair) break;
      const keyNode = pair.key as Node | null;
      if (keyNode?.range) line = lines.linePos(keyNode.range[0]).line;
      node = pair.value;
    } else if (isSeq(node)) {
      const item = node.items[Number(key)] as Node | undefined;
      if (!item) break;
      if (item.range) line = lines.linePos(item.range[0]).line;
      node = item;
    } else {
      break;
    }
  }
  return line;
}
