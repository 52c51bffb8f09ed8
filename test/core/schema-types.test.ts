// The TypeScript shapes of the YAML come from the JSON Schemas: the committed file must be what the generator
// writes today, so a schema change without regenerating fails here (and then in tsc wherever a shape is used).
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { generateSchemaTypes, SCHEMA_TYPES_FILE } from '../../engine/catalog/generate-schema-types.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

let tree: TempTree | undefined;
afterEach(() => tree?.remove());

describe('types generated from the schemas', () => {
  it('engine/core/schema-types.ts is up to date (else run: node --import tsx engine/catalog/generate-schema-types.ts)', () => {
    expect(readFileSync(SCHEMA_TYPES_FILE, 'utf8')).toBe(generateSchemaTypes());
  });

  it('a schema change changes the generated types', () => {
    tree = tempCatalogTree();
    tree.edit('config/schemas/limits.schema.json', (t) =>
      t.replace('"properties": {', '"properties": {\n    "idle_timeout_ms": { "type": "integer", "description": "Idle time." },'),
    );
    const generated = generateSchemaTypes(tree.root);
    expect(generated).not.toBe(generateSchemaTypes());
    expect(generated).toMatch(/export type LimitsFile = \{\n {2}\/\*\* Idle time\. \*\/\n {2}idle_timeout_ms\?: number;/);
  });

  it('two schemas naming the same type must agree (the vendor id of the catalog and of doors.yaml)', () => {
    tree = tempCatalogTree();
    tree.edit('catalog/schema.json', (t) => t.replace('"pattern": "^[a-z][a-z0-9]*$"', '"enum": ["a", "f"]'));
    expect(() => generateSchemaTypes(tree!.root)).toThrow(/both named VendorId but differ/);
  });
});
