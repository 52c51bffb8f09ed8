// Where request bodies carry the prompt's text and what in them makes a vendor pull content in, read off the wire
// formats' declarations (Protocol `prompt`, in transforms/protocols/<format>/): this reader names no format's fields.
// Each use reads every format's declarations together, since each asks for a bound that must hold whatever field a
// vendor reads: a field of any format counts as prompt, and pulls content in, wherever it sits.
import type { JsonObject, JsonValue } from './types.ts';

/**
 * Where a format's bodies carry what the model reads.
 *   turns         top-level fields holding the turns the vendor frames: a list frames each entry, a string is one turn
 *   system_prompt top-level fields holding a system prompt the vendor frames as one more turn when it is given
 *   text_keys     keys whose strings, under those fields, are text the model reads (a part's text, a tool's output);
 *                 strings under other keys (roles, types, ids) are not, nor those of a field's items with no key
 *   pulls         what makes its vendors put content in the prompt that the body does not show (ContentPulls)
 *   cache_mark    the key, anywhere in a body, of a prompt-cache breakpoint (any value but null marks one, and the
 *                 vendor then bills the cache's write), and the member of it that asks for one kept an hour
 */
export interface PromptFields {
  turns: string[];
  system_prompt?: string[];
  text_keys?: string[];
  pulls?: ContentPulls;
  cache_mark?: { key: string; hour?: { field: string; value: string } };
}

/**
 * What makes a format's vendors pull content in at a size the body does not show (a file fetched by URL or id, a
 * PDF billed per page, a page a fetch tool reads, a stored conversation replayed): then the body's bytes do not
 * bound its input, and only the context window does.
 *   part  an object anywhere in the body (a content part, a tool, an input item) that points at such content
 *   body  the body's own members ask for such content
 */
interface ContentPulls {
  part?: (part: JsonObject) => boolean;
  body?: (body: JsonObject) => boolean;
}

/** Some formats' declarations read together, made once for the walks made of every body. */
export interface PromptReading {
  /** Fields framed per entry, and fields framed once (those of `turns` left out, so none counts twice). */
  turns: string[];
  systemPrompts: string[];
  /** The top-level fields under which the prompt's text sits: turns and system prompts. */
  fields: string[];
  /** Keys whose strings under `fields` are read: the fields themselves, and every declared text key. */
  textKeys: ReadonlySet<string>;
  /** Every format's tests of an object, and of a body, for content pulled in. */
  partPulls: ((part: JsonObject) => boolean)[];
  bodyPulls: ((body: JsonObject) => boolean)[];
  /** Every format's cache breakpoint keys, each with the members that ask for a write kept an hour. */
  cacheMarks: ReadonlyMap<string, readonly { field: string; value: string }[]>;
}

/** The union of `declared`: a field one format declares is read so in every body. */
export function promptReading(declared: readonly PromptFields[]): PromptReading {
  const turns = [...new Set(declared.flatMap((p) => p.turns))];
  const systemPrompts = [...new Set(declared.flatMap((p) => p.system_prompt ?? []))].filter((f) => !turns.includes(f));
  const fields = [...turns, ...systemPrompts];
  return {
    turns,
    systemPrompts,
    fields,
    textKeys: new Set([...fields, ...declared.flatMap((p) => p.text_keys ?? [])]),
    partPulls: declared.flatMap((p) => (p.pulls?.part ? [p.pulls.part] : [])),
    bodyPulls: declared.flatMap((p) => (p.pulls?.body ? [p.pulls.body] : [])),
    cacheMarks: cacheMarksOf(declared),
  };
}

function cacheMarksOf(declared: readonly PromptFields[]): Map<string, { field: string; value: string }[]> {
  const marks = new Map<string, { field: string; value: string }[]>();
  for (const { cache_mark: mark } of declared) {
    if (!mark) continue;
    const hours = marks.get(mark.key) ?? [];
    if (mark.hour) hours.push(mark.hour);
    marks.set(mark.key, hours);
  }
  return marks;
}

/** The turns the vendor frames: each entry of a list of turns (a string is one), and each system prompt given. */
export function framedTurns(body: JsonObject, r: PromptReading): number {
  let turns = 0;
  for (const field of r.turns) {
    const v = body[field];
    turns += Array.isArray(v) ? v.length : typeof v === 'string' ? 1 : 0;
  }
  for (const field of r.systemPrompts) if (given(body[field])) turns++;
  return turns;
}

/** Whether `part` points at content a vendor pulls in, as some format declares it. */
export const pointsAtContent = (part: JsonObject, r: PromptReading): boolean => r.partPulls.some((pulls) => pulls(part));

/** Whether the body's own members ask a vendor for content it does not show, as some format declares it. */
export const fieldsPullContent = (body: JsonObject, r: PromptReading): boolean => r.bodyPulls.some((pulls) => pulls(body));

/** A member that is given: present, and neither null nor an empty string. */
export const given = (v: JsonValue | undefined): boolean => v !== undefined && v !== null && v !== '';
