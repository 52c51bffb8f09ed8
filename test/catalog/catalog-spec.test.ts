// The catalog against the spec. Every price, threshold, context window, date, successor, reservation,
// per-second and per-character price and data-handling fact that interface.md states is copied into the
// tables below and asserted exactly; the spec's counts and rules about the catalog are asserted after
// them. The first block checks the raw YAML files against catalog/schema.json, independent of the loader.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadCatalog } from '../../engine/catalog/catalog.ts';
import type { ModelEntry, Pricing, VendorId } from '../../engine/core/types.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CATALOG_DIR = join(ROOT, 'catalog');
const RULES_FILE = join(ROOT, 'config', 'rules.yaml');

// ---------------------------------------------------------------------------------------------------
// The spec's figures, copied from interface.md. `spec` lists the fields these figures fill, so the
// test can also check that none of them is marked `assumed` in the catalog.
// ---------------------------------------------------------------------------------------------------

interface TextFact {
  id: string;
  vendor: VendorId;
  input: number;
  output: number;
  context_window: number;
  tiers?: { above_input_tokens: number; input: number; output: number }[];
  sale_ends?: string;
  doors: string[];
}

/** "POST /v1/responses": responses-door-only models, price per 1M input / output, context. */
const RESPONSES_ONLY: TextFact[] = [
  {
    id: 'b-pro-5.5',
    vendor: 'b',
    input: 30,
    output: 180,
    context_window: 1_050_000,
    tiers: [{ above_input_tokens: 272_000, input: 60, output: 270 }],
    doors: ['responses'],
  },
  {
    id: 'b-pro-5.4',
    vendor: 'b',
    input: 30,
    output: 180,
    context_window: 1_050_000,
    tiers: [{ above_input_tokens: 272_000, input: 60, output: 270 }],
    doors: ['responses'],
  },
  { id: 'b-pro-5.2', vendor: 'b', input: 21, output: 168, context_window: 400_000, doors: ['responses'] },
  { id: 'b-pro-5', vendor: 'b', input: 15, output: 120, context_window: 400_000, doors: ['responses'] },
  { id: 'o-pro-3', vendor: 'b', input: 20, output: 80, context_window: 200_000, doors: ['responses'] },
  { id: 'o-pro-1', vendor: 'b', input: 150, output: 600, context_window: 200_000, sale_ends: '2026-10-23', doors: ['responses'] },
  { id: 'b-codex-5.3', vendor: 'b', input: 1.75, output: 14, context_window: 400_000, doors: ['responses'] },
];

/** "Image doors": vendor B image models, price per 1M tokens (input / output) and reservation per image. */
const IMAGES_B = [
  { id: 'image-b-1', input: 5, output: 30, image_reservation: 0.11, sale_ends: null },
  { id: 'image-b-2', input: 5, output: 30, image_reservation: 0.11, sale_ends: null },
  { id: 'image-b-3', input: 5, output: 30, image_reservation: 0.28, sale_ends: null },
  { id: 'image-b-4', input: 5, output: 32, image_reservation: 0.29, sale_ends: '2026-12-01' },
  { id: 'image-b-5', input: 5, output: 40, image_reservation: 0.36, sale_ends: '2026-10-23' },
  { id: 'image-b-6', input: 2, output: 8, image_reservation: 0.075, sale_ends: '2026-12-01' },
] as const;

/** "Image doors": vendor D image models, no token prices; reserve and vendor charge per image. */
const IMAGES_D = [
  { id: 'image-d-1', image_reservation: 0.03, image_charge: 0.02 },
  { id: 'image-d-2', image_reservation: 0.09, image_charge: 0.06 },
  { id: 'image-d-3', image_reservation: 0.075, image_charge: 0.05 },
] as const;
/** "the reservation is 1.5 times the per-image charge". */
const VENDOR_D_IMAGE_RESERVATION_FACTOR = 1.5;

/** "Video doors": per second of output, by resolution; token prices $0. */
const VIDEOS: { id: string; video_per_second: Record<string, number> }[] = [
  { id: 'video-d-1', video_per_second: { '480p': 0.05, '720p': 0.07 } },
  { id: 'video-d-2', video_per_second: { '480p': 0.08, '720p': 0.14, '1080p': 0.25 } },
];

/** "POST /v1/audio/speech": USD per 1M characters. */
const SPEECH = [
  { id: 'tts-1', per_mchar: 15 },
  { id: 'tts-1-hd', per_mchar: 30 },
] as const;

/** "POST /v1/embeddings": input price per 1M tokens; output $0; no context window. */
const EMBEDDINGS: { id: string; vendor: VendorId; input: number }[] = [
  { id: 'text-embedding-3-small', vendor: 'b', input: 0.02 },
  { id: 'text-embedding-3-large', vendor: 'b', input: 0.13 },
  { id: 'text-embedding-ada-002', vendor: 'b', input: 0.1 },
  { id: 'embedding-c-1', vendor: 'c', input: 0.15 },
  { id: 'embedding-c-2', vendor: 'c', input: 0.2 },
];

/** "POST /v1/moderations": the two models; free. */
const MODERATIONS = ['omni-moderation-latest', 'omni-moderation-2024-09-26'];

/** General behaviour 5: vendor E's data handling. */
const VENDOR_E_DATA_HANDLING = {
  region: 'United States',
  deletes_request_after_answer: true,
  cache_retention: 'undisclosed',
};

/** General behaviour 6 and Versioning 4: the sale-end dates in the catalog. */
const SALE_END_DATES = ['2026-10-23', '2026-12-01'];

/** General behaviour 6: three vendor C flash-tier models move to 1.5 / 7.5 from 2027-01-01. */
const FLASH_SCHEDULE = { from: '2027-01-01', input: 1.5, output: 7.5 };
const FLASH_MODELS = ['c-flash-3', 'c-flash-2.5', 'c-flash-lite-2.5'];

/** General behaviour 7: tier thresholds by vendor. */
const TIER_THRESHOLD: Partial<Record<VendorId, number>> = { b: 272_000, c: 200_000, d: 200_000 };

/** General behaviour 7: context windows of text models lie in 16K..1050K. */
const CONTEXT_MIN = 16_000;
const CONTEXT_MAX = 1_050_000;

/** "temperature, top_p": the seven vendor A models whose sampling parameters the chat door drops. */
const DROP_SAMPLING = ['a-top-5.5', 'a-top-5', 'a-high-5.5', 'a-high-5', 'a-mid-5.1', 'a-high-4.8', 'a-high-4.7'];
/** "tool_choice": the three vendor A models whose forced tool choices are lowered to auto. */
const LOWER_FORCED_TOOL_CHOICE = ['a-top-5.5', 'a-high-5.5', 'a-mid-5.1'];

// ---------------------------------------------------------------------------------------------------

function catalogFiles(): string[] {
  return readdirSync(CATALOG_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
}

describe('catalog files against catalog/schema.json', () => {
  const schema = JSON.parse(readFileSync(join(CATALOG_DIR, 'schema.json'), 'utf8')) as object;
  const validate = new Ajv({ allErrors: true, strict: true }).compile(schema);
  const minimal = () => ({
    vendor: 'b',
    models: {
      'x-1': {
        kind: 'text',
        context_window: 100_000,
        max_output: 1000,
        pricing: { input: 1, output: 2 },
        source: 'assumed',
      } as Record<string, unknown>,
    },
  });

  it('has the six expected files', () => {
    expect(catalogFiles()).toEqual(['media.yaml', 'vendor-a.yaml', 'vendor-b.yaml', 'vendor-c.yaml', 'vendor-d.yaml', 'vendor-e.yaml']);
  });

  it.each(catalogFiles())('%s passes the schema', (file) => {
    const data = parse(readFileSync(join(CATALOG_DIR, file), 'utf8')) as unknown;
    const ok = validate(data);
    expect(ok ? [] : validate.errors).toEqual([]);
  });

  it('accepts a minimal text model', () => {
    expect(validate(minimal())).toBe(true);
  });

  it('refuses a misspelt pricing field', () => {
    const doc = minimal();
    doc.models['x-1'].pricing = { inptu: 1, output: 2 };
    expect(validate(doc)).toBe(false);
    expect(validate.errors?.some((e) => e.keyword === 'additionalProperties')).toBe(true);
  });

  // An unknown door or vendor is the loader's to refuse (config/doors.yaml and config/vendors.yaml are the one
  // lists of them): test/catalog/catalog-check.test.ts, test/catalog/vendor-references.test.ts.
  it('refuses an unknown model field or kind, and a vendor id that is no lowercase id', () => {
    for (const patch of [{ contxt_window: 1 }, { vendor: 'F' }, { vendor: 'vendor-f' }, { kind: 'audio' }]) {
      const doc = minimal();
      Object.assign(doc.models['x-1'], patch);
      expect(validate(doc), JSON.stringify(patch)).toBe(false);
    }
  });

  it('refuses a text model without max_output or with a context window outside 16K..1050K', () => {
    const noMax = minimal();
    delete noMax.models['x-1'].max_output;
    expect(validate(noMax)).toBe(false);
    for (const cw of [8000, 2_000_000, null]) {
      const doc = minimal();
      doc.models['x-1'].context_window = cw;
      expect(validate(doc), String(cw)).toBe(false);
    }
  });

  it('refuses a negative price, a malformed date, and a sale end without successor', () => {
    const negative = minimal();
    negative.models['x-1'].pricing = { input: -1, output: 2 };
    expect(validate(negative)).toBe(false);
    const badDate = minimal();
    Object.assign(badDate.models['x-1'], { sale_ends: '2026-13-01', successor: 'x-2' });
    expect(validate(badDate)).toBe(false);
    const noSuccessor = minimal();
    Object.assign(noSuccessor.models['x-1'], { sale_ends: '2026-12-01', successor: null });
    expect(validate(noSuccessor)).toBe(false);
  });
});

describe('catalog against interface.md', () => {
  let models: Map<string, ModelEntry>;
  const model = (id: string): ModelEntry => {
    const m = models.get(id);
    if (!m) throw new Error(`model ${id} is missing from the catalog`);
    return m;
  };
  const all = () => [...models.values()];
  const text = (vendor?: VendorId) => all().filter((m) => m.kind === 'text' && (!vendor || m.vendor === vendor));
  /** A figure stated by the spec must not be marked assumed. */
  const expectStated = (m: ModelEntry, fields: string[]) => {
    expect(m.source, `${m.id} source`).toBe('spec');
    for (const f of fields) expect(m.assumed ?? [], `${m.id}: ${f} is the spec's figure`).not.toContain(f);
  };

  beforeAll(() => {
    models = loadCatalog(CATALOG_DIR).models;
  });

  describe('responses-door-only models', () => {
    it.each(RESPONSES_ONLY)('$id', (f) => {
      const m = model(f.id);
      expect(m.vendor).toBe(f.vendor);
      expect(m.kind).toBe('text');
      expect(m.doors).toEqual(f.doors);
      expect(m.context_window).toBe(f.context_window);
      expect(m.pricing.input).toBe(f.input);
      expect(m.pricing.output).toBe(f.output);
      expect(m.pricing.tiers ?? []).toEqual(f.tiers ?? []);
      expect(m.sale_ends).toBe(f.sale_ends ?? null);
      if (f.sale_ends) expect(m.successor).not.toBeNull();
      expectStated(m, ['context_window', 'input', 'output', 'tiers', 'sale_ends']);
    });

    it('the tiered price applies from 272K input tokens for exactly the 5.4 and 5.5 pro models', () => {
      const tiered = RESPONSES_ONLY.filter((f) => model(f.id).pricing.tiers?.length).map((f) => f.id);
      expect(tiered.sort()).toEqual(['b-pro-5.4', 'b-pro-5.5']);
    });
  });

  describe('image models', () => {
    it.each(IMAGES_B)('$id', (f) => {
      const m = model(f.id);
      expect(m.vendor).toBe('b');
      expect(m.kind).toBe('image');
      expect(m.pricing.input).toBe(f.input);
      expect(m.pricing.output).toBe(f.output);
      expect(m.pricing.image_reservation).toBe(f.image_reservation);
      expect(m.pricing.image_charge).toBeUndefined();
      expect(m.sale_ends).toBe(f.sale_ends);
      expect(m.context_window).toBeNull();
      expect(m.doors).toContain('images');
      expectStated(m, ['input', 'output', 'image_reservation', 'sale_ends']);
    });

    it.each(IMAGES_D)('$id', (f) => {
      const m = model(f.id);
      expect(m.vendor).toBe('d');
      expect(m.kind).toBe('image');
      expect(m.pricing.image_reservation).toBe(f.image_reservation);
      expect(m.pricing.image_charge).toBe(f.image_charge);
      expect(m.pricing.image_reservation).toBeCloseTo(f.image_charge * VENDOR_D_IMAGE_RESERVATION_FACTOR, 12);
      // "Vendor D image models have no token prices."
      expect(m.pricing.input ?? 0).toBe(0);
      expect(m.pricing.output ?? 0).toBe(0);
      expect(m.doors).toContain('images');
      expectStated(m, ['image_reservation', 'image_charge']);
    });

    it('lists exactly the spec image models', () => {
      const ids = all()
        .filter((m) => m.kind === 'image')
        .map((m) => m.id)
        .sort();
      expect(ids).toEqual([...IMAGES_B, ...IMAGES_D].map((f) => f.id).sort());
    });
  });

  describe('video models', () => {
    it.each(VIDEOS)('$id', (f) => {
      const m = model(f.id);
      expect(m.vendor).toBe('d');
      expect(m.kind).toBe('video');
      expect(m.pricing.video_per_second).toEqual(f.video_per_second);
      expect(m.pricing.input ?? 0).toBe(0);
      expect(m.pricing.output ?? 0).toBe(0);
      expectStated(m, ['video_per_second']);
    });

    it('video-d-1 does not produce 1080p', () => {
      expect(model('video-d-1').pricing.video_per_second?.['1080p']).toBeUndefined();
    });
  });

  describe('speech models', () => {
    it.each(SPEECH)('$id', (f) => {
      const m = model(f.id);
      expect(m.vendor).toBe('b');
      expect(m.kind).toBe('speech');
      expect(m.pricing.per_mchar).toBe(f.per_mchar);
      expectStated(m, ['per_mchar']);
    });
  });

  describe('embedding models', () => {
    it.each(EMBEDDINGS)('$id', (f) => {
      const m = model(f.id);
      expect(m.vendor).toBe(f.vendor);
      expect(m.kind).toBe('embedding');
      expect(m.pricing.input).toBe(f.input);
      expect(m.pricing.output ?? 0).toBe(0);
      expect(m.context_window).toBeNull();
      expectStated(m, ['input', 'output', 'context_window']);
    });
  });

  describe('moderation models', () => {
    it.each(MODERATIONS)('%s is free', (id) => {
      const m = model(id);
      expect(m.vendor).toBe('b');
      expect(m.kind).toBe('moderation');
      const p: Pricing = m.pricing;
      expect([p.input ?? 0, p.output ?? 0, p.cache_read ?? 0, p.per_mchar ?? 0, p.image_reservation ?? 0]).toEqual([0, 0, 0, 0, 0]);
    });
  });

  describe('vendor E data handling', () => {
    it('every vendor E model is handled in the United States, deleted after answering, cache retention undisclosed', () => {
      const e = all().filter((m) => m.vendor === 'e');
      expect(e.length).toBeGreaterThanOrEqual(5);
      for (const m of e) {
        expect(m.data_handling, m.id).toEqual(VENDOR_E_DATA_HANDLING);
        expect(m.assumed ?? [], m.id).not.toContain('data_handling');
      }
    });

    it('no other vendor carries a data-handling note', () => {
      expect(
        all()
          .filter((m) => m.vendor !== 'e' && m.data_handling !== null)
          .map((m) => m.id),
      ).toEqual([]);
    });
  });

  describe('sale ends and successors', () => {
    it('uses only the spec sale-end dates, and both of them', () => {
      const dates = new Set(all().flatMap((m) => (m.sale_ends ? [m.sale_ends] : [])));
      expect([...dates].sort()).toEqual(SALE_END_DATES);
    });

    it('every model with a sale end names a successor that exists, is still sold and is of the same kind', () => {
      for (const m of all().filter((x) => x.sale_ends !== null)) {
        expect(m.successor, m.id).not.toBeNull();
        const s = models.get(m.successor!);
        expect(s, `${m.id} -> ${m.successor}`).toBeDefined();
        expect(s!.sale_ends, `${m.successor} is itself ending`).toBeNull();
        expect(s!.kind).toBe(m.kind);
        expect(s!.vendor).toBe(m.vendor);
      }
    });

    it('every successor exists', () => {
      for (const m of all()) if (m.successor !== null) expect(models.has(m.successor), m.id).toBe(true);
    });
  });

  describe('vendor C flash-tier schedule', () => {
    it.each(FLASH_MODELS)('%s moves to 1.5 / 7.5 from 2027-01-01', (id) => {
      const m = model(id);
      expect(m.vendor).toBe('c');
      expect(m.pricing.scheduled).toEqual([FLASH_SCHEDULE]);
      expectStated(m, ['scheduled']);
    });

    it('exactly three models carry a scheduled price change, all of them vendor C', () => {
      const scheduled = all().filter((m) => m.pricing.scheduled?.length);
      expect(scheduled.map((m) => m.id).sort()).toEqual([...FLASH_MODELS].sort());
    });
  });

  describe('price tiers', () => {
    it('every tier threshold is the one the spec gives for its vendor', () => {
      for (const m of all()) {
        for (const t of m.pricing.tiers ?? []) {
          expect(TIER_THRESHOLD[m.vendor], `${m.id}: vendor ${m.vendor} has no tiers in the spec`).toBeDefined();
          expect(t.above_input_tokens, m.id).toBe(TIER_THRESHOLD[m.vendor]);
        }
      }
    });

    it('exactly one vendor C model has a tier, the pro-preview model', () => {
      const c = text('c').filter((m) => m.pricing.tiers?.length);
      expect(c.map((m) => m.id)).toEqual(['c-pro-3-preview']);
    });

    it('vendor D lists tiered models', () => {
      expect(text('d').filter((m) => m.pricing.tiers?.length).length).toBeGreaterThanOrEqual(1);
    });

    it('a tier never lowers the price, and its threshold lies inside the context window', () => {
      for (const m of all()) {
        for (const t of m.pricing.tiers ?? []) {
          expect(t.input, m.id).toBeGreaterThanOrEqual(m.pricing.input ?? 0);
          expect(t.output, m.id).toBeGreaterThanOrEqual(m.pricing.output ?? 0);
          expect(t.above_input_tokens, m.id).toBeLessThan(m.context_window ?? Infinity);
        }
      }
    });
  });

  describe('text models', () => {
    it('at least five text models per vendor', () => {
      for (const v of ['a', 'b', 'c', 'd', 'e'] as const) expect(text(v).length, `vendor ${v}`).toBeGreaterThanOrEqual(5);
    });

    it('every context window lies in 16K..1050K, and both bounds are reached', () => {
      for (const m of text()) {
        expect(m.context_window, m.id).toBeGreaterThanOrEqual(CONTEXT_MIN);
        expect(m.context_window, m.id).toBeLessThanOrEqual(CONTEXT_MAX);
      }
      const windows = text().map((m) => m.context_window!);
      expect(Math.min(...windows)).toBeLessThan(17_000);
      expect(Math.max(...windows)).toBe(CONTEXT_MAX);
    });

    it('every text model has a max output to reserve against, smaller than its context window', () => {
      for (const m of text()) {
        expect(Number.isInteger(m.max_output), m.id).toBe(true);
        expect(m.max_output!, m.id).toBeGreaterThan(0);
        expect(m.max_output!, m.id).toBeLessThan(m.context_window!);
      }
    });

    it('every text model has input and output prices; cache reads are cheaper than input', () => {
      for (const m of text()) {
        expect(m.pricing.input, m.id).toBeGreaterThan(0);
        expect(m.pricing.output, m.id).toBeGreaterThan(0);
        if (m.pricing.cache_read !== undefined) expect(m.pricing.cache_read, m.id).toBeLessThan(m.pricing.input!);
      }
    });

    it('non-text models have no context window', () => {
      for (const m of all().filter((x) => x.kind !== 'text')) expect(m.context_window, m.id).toBeNull();
    });
  });

  describe('model rules', () => {
    const withRule = (rule: string) =>
      all()
        .filter((m) => m.rules.includes(rule))
        .map((m) => m.id)
        .sort();

    it('every rule named in the catalog exists in config/rules.yaml', () => {
      const rules = parse(readFileSync(RULES_FILE, 'utf8')) as Record<string, unknown>;
      for (const m of all()) for (const r of m.rules) expect(Object.keys(rules), `${m.id}: ${r}`).toContain(r);
    });

    it('seven vendor A models drop temperature and top_p', () => {
      expect(withRule('drop-sampling')).toEqual([...DROP_SAMPLING].sort());
      for (const id of DROP_SAMPLING) expect(model(id).vendor).toBe('a');
    });

    it('three of them lower forced tool choices', () => {
      expect(withRule('lower-forced-tool-choice')).toEqual([...LOWER_FORCED_TOOL_CHOICE].sort());
      for (const id of LOWER_FORCED_TOOL_CHOICE) expect(DROP_SAMPLING).toContain(id);
    });

    it('vendor A has older models without those rules', () => {
      expect(text('a').filter((m) => !m.rules.includes('drop-sampling')).length).toBeGreaterThanOrEqual(1);
    });

    it('vendor A text models are served on the chat and messages doors', () => {
      for (const m of text('a')) {
        expect(m.doors, m.id).toContain('chat');
        expect(m.doors, m.id).toContain('messages');
      }
    });

    it('two newest vendor B models accept none..xhigh and take tools on chat only without reasoning', () => {
      const ids = text('b')
        .filter((m) => JSON.stringify(m.effort_levels) === JSON.stringify(['none', 'low', 'medium', 'high', 'xhigh']))
        .map((m) => m.id)
        .sort();
      expect(ids).toHaveLength(2);
      expect(withRule('tools-need-effort-none')).toEqual(ids);
    });

    it('two other newest vendor B models accept low..xhigh and take tools only on the responses door', () => {
      const ids = text('b')
        .filter((m) => JSON.stringify(m.effort_levels) === JSON.stringify(['low', 'medium', 'high', 'xhigh']) && m.doors.includes('chat'))
        .map((m) => m.id)
        .sort();
      expect(ids).toHaveLength(2);
      expect(withRule('tools-only-on-responses')).toEqual(ids);
    });

    it('no vendor B model accepts reasoning_effort max', () => {
      for (const m of all().filter((x) => x.vendor === 'b')) expect(m.effort_levels ?? [], m.id).not.toContain('max');
    });

    it('vendor B models on the chat door with an effort setting (fifth generation on, o-series) refuse max_tokens', () => {
      for (const m of text('b').filter((x) => x.doors.includes('chat') && x.effort_levels !== null)) {
        expect(m.rules, m.id).toContain('vendor-refuses-max-tokens');
      }
    });

    it('most fifth-generation-onward vendor B models accept only temperature 1', () => {
      const fifthOn = text('b').filter((m) => /^b-(5|6)/.test(m.id));
      const refusing = fifthOn.filter((m) => m.rules.includes('vendor-refuses-temperature'));
      expect(refusing.length * 2).toBeGreaterThan(fifthOn.length);
    });

    it('web_search is refused on exactly the two small fourth-generation models', () => {
      const ids = withRule('refuse-web-search');
      expect(ids).toHaveLength(2);
      for (const id of ids) {
        expect(model(id).vendor).toBe('b');
        expect(model(id).rules).toContain('refuse-web-search-preview');
      }
    });

    it('web_search_preview is refused only on models without an effort setting (before the fifth generation)', () => {
      for (const id of withRule('refuse-web-search-preview')) {
        expect(model(id).vendor).toBe('b');
        expect(model(id).effort_levels, id).toBeNull();
      }
    });
  });
});
