import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { answerTransforms, requestTransforms, streamTranslators, usageReaders } from '../../transforms/index.ts';

describe('transform registries', () => {
  it('resolve every name config/doors.yaml refers to', () => {
    const doors = parse(readFileSync(new URL('../../config/doors.yaml', import.meta.url), 'utf8')) as Record<
      string,
      { protocols?: Record<string, Record<string, unknown>> }
    >;
    const missing: string[] = [];
    for (const [door, d] of Object.entries(doors)) {
      for (const [protocol, p] of Object.entries(d.protocols ?? {})) {
        const where = `${door}.${protocol}`;
        for (const name of (p.request as string[] | undefined) ?? [])
          if (!requestTransforms[name]) missing.push(`${where}.request ${name}`);
        if (typeof p.answer === 'string' && !answerTransforms[p.answer]) missing.push(`${where}.answer ${p.answer}`);
        if (typeof p.stream === 'string' && !streamTranslators[p.stream]) missing.push(`${where}.stream ${p.stream}`);
        if (typeof p.usage === 'string' && !usageReaders[p.usage]) missing.push(`${where}.usage ${p.usage}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
