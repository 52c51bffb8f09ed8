// Writes engine/core/schema-types.ts from the JSON Schemas, so each YAML shape is written down once; run
// `npm run schema-types` after changing a schema (test/core/schema-types.test.ts fails while the file is stale).
// Only keywords that shape types are understood; value limits (minimum, pattern, allOf refinements) are ajv's.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
export const SCHEMA_TYPES_FILE = join(ROOT, 'engine', 'core', 'schema-types.ts');

type Schema = {
  $id?: string;
  $ref?: string;
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  propertyNames?: Schema;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  oneOf?: Schema[];
  anyOf?: Schema[];
  definitions?: Record<string, Schema>;
};

/**
 * The schema parts that become named types, by `$id#pointer`. Anything else is written inline where it is
 * used. Two pointers may share a name only when they describe the same type (checked below).
 */
const NAMES: Record<string, string> = {
  'doors.schema.json#': 'DoorsFile',
  'doors.schema.json#/definitions/vendor': 'VendorId',
  'doors.schema.json#/definitions/kind': 'ModelKind',
  'doors.schema.json#/definitions/scalar': 'ScalarValue',
  'doors.schema.json#/definitions/billing': 'BillingKind',
  'doors.schema.json#/definitions/condition': 'Condition',
  'doors.schema.json#/definitions/refusal': 'RefusalYaml',
  'doors.schema.json#/definitions/refusalStatus': 'RefusalStatus',
  'doors.schema.json#/definitions/door': 'DoorYaml',
  'vendors.schema.json#': 'VendorsFile',
  'vendors.schema.json#/additionalProperties': 'VendorYaml',
  'billing.schema.json#': 'BillingFile',
  'billing.schema.json#/definitions/needs': 'ChainNeeds',
  'callers.schema.json#': 'CallersFile',
  'callers.schema.json#/definitions/callerRefusal': 'CallerRefusalYaml',
  'limits.schema.json#': 'LimitsFile',
  'rules.schema.json#': 'RulesFile',
  'rules.schema.json#/additionalProperties': 'RuleYaml',
  'videos.schema.json#': 'VideosFile',
  'catalog.json#': 'CatalogFile',
  'catalog.json#/definitions/vendor': 'VendorId',
  'catalog.json#/definitions/kind': 'ModelKind',
  'catalog.json#/definitions/pricing': 'Pricing',
  'catalog.json#/definitions/pricing/properties/tiers/items': 'PriceTier',
  'catalog.json#/definitions/pricing/properties/scheduled/items': 'ScheduledPrice',
  'catalog.json#/definitions/dataHandling': 'DataHandling',
  'catalog.json#/definitions/effortLevel': 'EffortLevel',
  'catalog.json#/definitions/assumedField': 'AssumedField',
  'catalog.json#/definitions/model': 'CatalogModel',
};

interface Loaded {
  id: string;
  file: string;
  schema: Schema;
}

/** The schema files, config's first, each known by the short id its `$ref`s use. */
function loadSchemas(root: string): Loaded[] {
  const dir = join(root, 'config', 'schemas');
  const files = readdirSync(dir)
    .filter((n) => n.endsWith('.schema.json'))
    .sort()
    .map((n) => join(dir, n));
  files.push(join(root, 'catalog', 'schema.json'));
  return files.map((file) => {
    const schema = JSON.parse(readFileSync(file, 'utf8')) as Schema;
    const id = (schema.$id ?? file).split('/').pop()!;
    return { id, file: file.slice(root.length + 1), schema };
  });
}

class Generator {
  private readonly byId: Map<string, Schema>;
  /** Named type → its body, in the order first met. */
  private readonly emitted = new Map<string, { body: string; doc?: string | undefined; from: string }>();

  constructor(private readonly schemas: Loaded[]) {
    this.byId = new Map(schemas.map((s) => [s.id, s.schema]));
  }

  run(): string {
    for (const s of this.schemas) this.named(`${s.id}#`, s.schema);
    const missing = Object.keys(NAMES).filter((p) => ![...this.emitted.values()].some((e) => e.from.split(' = ').includes(p)));
    if (missing.length) throw new Error(`named schema parts not found: ${missing.join(', ')}`);
    const header = [
      `// Generated from ${this.schemas.map((s) => s.file).join(', ')}.`,
      '// Do not edit: change the schema, then run `npm run schema-types`.',
      '',
    ];
    const blocks = [...this.emitted].map(([name, e]) => `${e.doc ? docComment(e.doc, '') : ''}export type ${name} = ${e.body};\n`);
    return header.join('\n') + blocks.join('\n');
  }

  /** Emits `pointer` as a named type (when NAMES names it) and returns how to refer to it. */
  private named(pointer: string, schema: Schema, indent = ''): string {
    const name = NAMES[pointer];
    if (!name) return this.typeOf(pointer, schema, indent, true);
    const seen = this.emitted.get(name);
    if (seen?.from.split(' = ').includes(pointer)) return name;
    // Reserve the name first: a schema may refer to itself (conditions nest).
    if (!seen) this.emitted.set(name, { body: '', from: pointer });
    const body = this.typeOf(pointer, schema, '', true);
    if (seen && seen.body !== body) {
      throw new Error(`${pointer} and ${seen.from} are both named ${name} but differ:\n${body}\n${seen.body}`);
    }
    if (seen) seen.from += ` = ${pointer}`;
    else this.emitted.set(name, { body, doc: schema.description, from: pointer });
    return name;
  }

  private resolve(from: string, ref: string): { pointer: string; schema: Schema } {
    const [file, fragment = ''] = ref.split('#');
    const id = file ? file.split('/').pop()! : from.split('#')[0]!;
    let node = this.byId.get(id);
    if (!node) throw new Error(`${from}: $ref ${ref} names no known schema`);
    for (const key of fragment.split('/').filter(Boolean)) node = (node as Record<string, Schema>)[key];
    if (!node) throw new Error(`${from}: $ref ${ref} points at nothing`);
    return { pointer: `${id}#${fragment}`, schema: node };
  }

  /** The TypeScript for one schema node; `indent` is the indentation of the line it starts on. */
  private typeOf(pointer: string, s: Schema, indent: string, asDefinition = false): string {
    if (!asDefinition && NAMES[pointer]) return this.named(pointer, s, indent);
    if (s.$ref) {
      const target = this.resolve(pointer, s.$ref);
      return this.named(target.pointer, target.schema, indent);
    }
    if (s.const !== undefined) return literal(s.const);
    if (s.enum) return s.enum.map(literal).join(' | ');
    const alternatives = s.oneOf ?? s.anyOf;
    if (alternatives) {
      const key = s.oneOf ? 'oneOf' : 'anyOf';
      return alternatives.map((alt, i) => wrapUnionMember(this.typeOf(`${pointer}/${key}/${i}`, alt, indent))).join(' | ');
    }
    const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : [];
    if (types.length === 0) return 'unknown';
    return types.map((t) => this.primitive(pointer, s, t, indent)).join(' | ');
  }

  private primitive(pointer: string, s: Schema, type: string, indent: string): string {
    switch (type) {
      case 'null':
        return 'null';
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'array':
        return s.items ? `${wrapUnionMember(this.typeOf(`${pointer}/items`, s.items, indent), true)}[]` : 'unknown[]';
      case 'object':
        return this.object(pointer, s, indent);
      default:
        throw new Error(`${pointer}: type ${type} is not understood`);
    }
  }

  private object(pointer: string, s: Schema, indent: string): string {
    const inner = `${indent}  `;
    const required = new Set(s.required ?? []);
    const extra = typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined;
    const props: [string, Schema][] = Object.entries(s.properties ?? {});
    const names = s.propertyNames?.$ref ? this.resolve(pointer, s.propertyNames.$ref).schema : s.propertyNames;
    const keys = names?.enum as string[] | undefined;
    if (keys) {
      if (!extra) throw new Error(`${pointer}: propertyNames without additionalProperties`);
      for (const key of keys) props.push([key, extra]);
    } else if (extra) {
      if (props.length) throw new Error(`${pointer}: both properties and additionalProperties`);
      return `Record<string, ${this.typeOf(`${pointer}/additionalProperties`, extra, indent)}>`;
    }
    if (props.length === 0) return 'Record<string, unknown>';
    const lines = props.map(([key, prop]) => {
      const where = keys?.includes(key) ? `${pointer}/additionalProperties` : `${pointer}/properties/${key}`;
      const doc = prop.description ? docComment(prop.description, inner) : '';
      return `${doc}${inner}${propertyKey(key)}${required.has(key) ? '' : '?'}: ${this.typeOf(where, prop, inner)};`;
    });
    return `{\n${lines.join('\n')}\n${indent}}`;
  }
}

const literal = (v: unknown) => (typeof v === 'string' ? `'${v.replace(/[\\']/g, '\\$&')}'` : JSON.stringify(v));
const propertyKey = (key: string) => (/^[A-Za-z_$][\w$]*$/.test(key) ? key : literal(key));

/** Object types and arrays of unions need parentheses inside a union or before `[]`. */
function wrapUnionMember(type: string, beforeArray = false): string {
  if (beforeArray && type.includes(' | ')) return `(${type})`;
  return type;
}

function docComment(text: string, indent: string): string {
  const words = text.split(/\s+/);
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + w.length + 1 > 100) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`).join('\n')}\n${indent} */\n`;
}

/** The text engine/core/schema-types.ts must hold for the schemas under `root`. */
export function generateSchemaTypes(root = ROOT): string {
  return new Generator(loadSchemas(root)).run();
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  writeFileSync(SCHEMA_TYPES_FILE, generateSchemaTypes());
  console.log(`wrote ${SCHEMA_TYPES_FILE}`);
}
