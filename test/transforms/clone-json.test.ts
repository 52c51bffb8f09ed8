// The copy of the client's body that a call's chain changes: equal to what structuredClone gave, sharing
// nothing with the original, and a hostile `__proto__` key stays a key (it must not become a prototype).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cloneJson } from '../../transforms/util/json.ts';

describe('cloneJson', () => {
  it('equals structuredClone for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(cloneJson(v)).toStrictEqual(structuredClone(v));
      }),
    );
  });

  it('shares no object or array with the original', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [], meta: { a: { b: 1 } } };
    const copy = cloneJson(body);
    copy.messages[0]!.content[0]!.text = 'changed';
    copy.messages.push({ role: 'assistant', content: [] });
    copy.meta.a.b = 2;
    expect(body).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      tools: [],
      meta: { a: { b: 1 } },
    });
  });

  it('keeps an own __proto__ key as a key', () => {
    const body = JSON.parse('{"a":1,"__proto__":{"polluted":true},"nested":{"__proto__":{"x":1}}}') as Record<string, unknown>;
    const copy = cloneJson(body);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['a', '__proto__', 'nested']);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual({ polluted: true });
    expect(Object.getOwnPropertyDescriptor(copy.nested, '__proto__')?.value).toEqual({ x: 1 });
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('copies what JSON cannot hold as structuredClone does', () => {
    const bytes = new Uint8Array([1, 2, 3]);
    const copy = cloneJson({ file: bytes });
    expect(copy.file).toEqual(bytes);
    expect(copy.file).not.toBe(bytes);
  });
});
