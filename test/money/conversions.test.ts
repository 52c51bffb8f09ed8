// The money conversions of engine/core/money.ts: the one int8 parser and the fixed credit unit.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../engine/catalog/config.ts';
import { creditsToNano, NANO_PER_CREDIT, nanoToCreditsCeil, nanoToCreditsFloor, toBigInt } from '../../engine/core/money.ts';
import { usedCredits } from '../../engine/keys/index.ts';

const ROOT = join(import.meta.dirname, '..', '..');

describe('toBigInt, the one parser of integers read from the database', () => {
  it('reads decimal strings (how int8 arrives), bigints and safe integers exactly', () => {
    expect(toBigInt('0')).toBe(0n);
    expect(toBigInt('-42')).toBe(-42n);
    expect(toBigInt('9223372036854775807')).toBe(9223372036854775807n);
    expect(toBigInt(12n)).toBe(12n);
    expect(toBigInt(7)).toBe(7n);
    expect(toBigInt(Number.MAX_SAFE_INTEGER)).toBe(9007199254740991n);
  });

  it.each([
    ['an empty string', ''],
    ['blanks', '  '],
    ['a fraction as text', '1.5'],
    ['hex text', '0x10'],
    ['exponent text', '1e3'],
    ['padded text', ' 12'],
    ['words', 'abc'],
    ['null (a NULL column)', null],
    ['undefined (a missing column)', undefined],
    ['a fractional number', 1.5],
    ['NaN', Number.NaN],
    ['a number beyond 2^53 (already rounded)', 2 ** 60],
    ['a boolean', true],
    ['an object', {}],
  ])('throws a TypeError on %s, never a silent 0', (_what, junk) => {
    expect(() => toBigInt(junk)).toThrow(TypeError);
    expect(() => toBigInt(junk)).toThrow(/not an integer amount/);
  });
});

describe('the credit unit', () => {
  it('is 1,000 nano-USD, and every conversion uses it', () => {
    expect(NANO_PER_CREDIT).toBe(1000n);
    expect(creditsToNano(3)).toBe(3n * NANO_PER_CREDIT);
    expect(nanoToCreditsFloor(NANO_PER_CREDIT * 2n - 1n)).toBe(1n);
    expect(nanoToCreditsCeil(NANO_PER_CREDIT + 1n)).toBe(2n);
  });

  it('key usage rounds up to whole credits and never shows below 0', () => {
    expect(usedCredits(0n)).toBe(0);
    expect(usedCredits(-5n)).toBe(0);
    expect(usedCredits(1n)).toBe(1);
    expect(usedCredits(1000n)).toBe(1);
    expect(usedCredits(1001n)).toBe(2);
  });

  it('is not a config key: billing.yaml has none, and its schema refuses one', () => {
    const billing = loadConfig(join(ROOT, 'config')).billing as unknown as Record<string, unknown>;
    expect(billing).not.toHaveProperty('nano_per_credit');
    const schema = JSON.parse(readFileSync(join(ROOT, 'config', 'schemas', 'billing.schema.json'), 'utf8'));
    expect(schema.properties).not.toHaveProperty('nano_per_credit');
    expect(schema.additionalProperties).toBe(false);
  });
});
