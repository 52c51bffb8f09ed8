// Where request bodies carry the prompt's text and what in them makes a vendor pull content in, read off the wire
// formats' declarations (Protocol `prompt`, in transforms/protocols/<format>/): this reader names no format's fields.
// Each use reads every format's declarations together, since each asks for a bound that must hold whatever field a
// vendor reads: a field of any format counts as prompt, and pulls content in, wherever it sits.
import { isJsonObject, type JsonObject, type JsonValue } from './types.ts';

/**
 * Where a format's bodies carry what the model reads.
 *   turns         top-level fields holding the turns the vendor frames: a list frames each entry, a string is one turn
 *   system_prompt top-level fields holding a system prompt the vendor frames as one more turn when it is given
 *   text_keys     keys whose strings, under those fields, are text the model reads (a part's text, a tool's output);
 *                 strings under other keys (roles, types, ids) are not, nor those of a field's items with no key
 *   pulls         what makes its vendors put content in the prompt that the body does not show (ContentPulls)
 */
export interface PromptFields {
  turns: string[];
  system_prompt?: string[];
  text_keys?: string[];
  pulls?: ContentPulls;
}

/**
 * What makes a format's vendors pull content in at a size the body does not show (a file fetched by URL or id, a
 * PDF billed per page, a page a fetch tool reads, a stored conversation replayed): then the body's bytes do not
 * bound its input, and only the context window does.
 *   parts   objects anywhere in the body (content parts, tools, input items) that point at such content
 *   fields  tests of the body's own members, any one of which holding means it asks for such content
 */
interface ContentPulls {
  parts?: ContentPointer[];
  fields?: MemberTests[];
}

/**
 * An object of type `type` (or whose type starts with `type_prefix`, a family of versioned tools) that points at
 * content when one of `when` holds, or always when `when` is absent.
 */
interface ContentPointer {
  type?: string;
  type_prefix?: string;
  when?: MemberTests[];
}

/** Members of an object by their dotted path (`source.type`), each with its test: all of them must hold. */
type MemberTests = Record<string, MemberTest>;

/**
 * A member's test:
 *   'string'   it is a string
 *   'given'    it is present, and neither null nor an empty string
 *   'items'    it is a list of at least one entry
 *   one_of     it is one of these strings
 *   none_of    it is anything but these strings, absent included
 */
type MemberTest = 'string' | 'given' | 'items' | { one_of: string[] } | { none_of: string[] };

/** Some formats' declarations read together, made once for the walks made of every body. */
export interface PromptReading {
  /** Fields framed per entry, and fields framed once (those of `turns` left out, so none counts twice). */
  turns: string[];
  systemPrompts: string[];
  /** The top-level fields under which the prompt's text sits: turns and system prompts. */
  fields: string[];
  /** Keys whose strings under `fields` are read: the fields themselves, and every declared text key. */
  textKeys: ReadonlySet<string>;
  /** Content pointers by their type, those matched by a prefix, and the body's own tests. */
  typed: ReadonlyMap<string, Alternatives[]>;
  prefixed: { prefix: string; when: Alternatives }[];
  fieldTests: Alternatives;
}

/** Alternatives, each a list of members by path with their test; null for a pointer that holds whatever it carries. */
type Alternatives = { path: string[]; test: MemberTest }[][] | null;

const compile = (when: MemberTests[]): { path: string[]; test: MemberTest }[][] =>
  when.map((tests) => Object.entries(tests).map(([path, test]) => ({ path: path.split('.'), test })));

/** The union of `declared`: a field one format declares is read so in every body. */
export function promptReading(declared: readonly PromptFields[]): PromptReading {
  const turns = [...new Set(declared.flatMap((p) => p.turns))];
  const systemPrompts = [...new Set(declared.flatMap((p) => p.system_prompt ?? []))].filter((f) => !turns.includes(f));
  const fields = [...turns, ...systemPrompts];
  const typed = new Map<string, Alternatives[]>();
  const prefixed: PromptReading['prefixed'] = [];
  for (const pointer of declared.flatMap((p) => p.pulls?.parts ?? [])) {
    const when = pointer.when ? compile(pointer.when) : null;
    if (pointer.type !== undefined) typed.set(pointer.type, [...(typed.get(pointer.type) ?? []), when]);
    if (pointer.type_prefix !== undefined) prefixed.push({ prefix: pointer.type_prefix, when });
  }
  return {
    turns,
    systemPrompts,
    fields,
    textKeys: new Set([...fields, ...declared.flatMap((p) => p.text_keys ?? [])]),
    typed,
    prefixed,
    fieldTests: compile(declared.flatMap((p) => p.pulls?.fields ?? [])),
  };
}

/** The turns the vendor frames: each entry of a list of turns (a string is one), and each system prompt given. */
export function framedTurns(body: JsonObject, r: PromptReading): number {
  let turns = 0;
  for (const field of r.turns) {
    const v = body[field];
    turns += Array.isArray(v) ? v.length : typeof v === 'string' ? 1 : 0;
  }
  for (const field of r.systemPrompts) if (passes(body[field], 'given')) turns++;
  return turns;
}

/** Whether `part` points at content a vendor pulls in (ContentPointer). */
export function pointsAtContent(part: JsonObject, r: PromptReading): boolean {
  const type = part.type;
  if (typeof type !== 'string') return false;
  const typed = r.typed.get(type);
  if (typed?.some((when) => holds(part, when))) return true;
  return r.prefixed.some((p) => type.startsWith(p.prefix) && holds(part, p.when));
}

/** Whether the body's own members ask the vendor for content it does not show (ContentPulls `fields`). */
export const fieldsPullContent = (body: JsonObject, r: PromptReading): boolean => holds(body, r.fieldTests);

/** Whether one of the alternatives holds of `v` (always, with none declared: null). */
const holds = (v: JsonObject, when: Alternatives): boolean =>
  when === null || when.some((tests) => tests.every((t) => passes(memberAt(v, t.path), t.test)));

function memberAt(v: JsonObject, path: string[]): JsonValue | undefined {
  let at: JsonValue | undefined = v;
  for (const key of path) at = isJsonObject(at) ? at[key] : undefined;
  return at;
}

function passes(v: JsonValue | undefined, test: MemberTest): boolean {
  switch (test) {
    case 'string':
      return typeof v === 'string';
    case 'given':
      return v !== undefined && v !== null && v !== '';
    case 'items':
      return Array.isArray(v) && v.length > 0;
    default:
      return 'one_of' in test ? typeof v === 'string' && test.one_of.includes(v) : !(typeof v === 'string' && test.none_of.includes(v));
  }
}
