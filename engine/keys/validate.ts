// The body-field table of POST and PATCH /v1/keys, as checks. Each failure is 400 invalid_request_error
// naming the field (`param`).
import { errors } from '../core/errors.ts';
import { isModelEntry, MAX_KEY_MODELS } from '../core/model-list.ts';
import type { Audience } from './types.ts';

/** Names beginning with this are reserved for people's team-chat keys. */
const CHAT_KEY_NAME_PREFIX = '채팅 · ';
const MAX_NAME = 40;
const MAX_NAME_PREFIX = 20;
export const MAX_COUNT = 100;

export const LIST_LIMIT = { min: 1, max: 500, default: 100 } as const;

/**
 * The body fields of POST and PATCH /v1/keys: which door accepts each, and its JSON Schema. The checks below
 * enforce the same bounds (one set of constants), and GET /openapi.json publishes this table as it is.
 */
export const KEY_BODY_FIELDS: Record<string, { createOnly?: boolean; schema: Record<string, unknown> }> = {
  count: { createOnly: true, schema: { type: 'integer', minimum: 1, maximum: MAX_COUNT, default: 1 } },
  name: {
    schema: { type: ['string', 'null'], minLength: 1, maxLength: MAX_NAME, description: `May not start with '${CHAT_KEY_NAME_PREFIX}'.` },
  },
  name_prefix: { createOnly: true, schema: { type: 'string', minLength: 1, maxLength: MAX_NAME_PREFIX } },
  audience: { schema: { enum: ['student', 'teacher', null] } },
  monthly_limit_credits: { schema: { type: ['integer', 'null'], minimum: 0 } },
  daily_limit_credits: { schema: { type: ['integer', 'null'], minimum: 0, description: 'Not above monthly_limit_credits.' } },
  expires_on: { schema: { type: ['string', 'null'], format: 'date', description: 'YYYY-MM-DD, not before today (Korean time).' } },
  group_id: { schema: { type: ['string', 'null'], description: "The key's group (GET /v1/key-groups); null takes it out of any." } },
  models: {
    schema: {
      type: ['array', 'null'],
      maxItems: MAX_KEY_MODELS,
      items: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}\\*?$|^\\*$' },
      description: 'Model ids or patterns ending in * (b-* is every id starting with b-) the key may call; null or [] for every model.',
    },
  },
};

const CREATE_FIELDS = Object.keys(KEY_BODY_FIELDS);
const PATCH_FIELDS = CREATE_FIELDS.filter((f) => !KEY_BODY_FIELDS[f]!.createOnly);

export interface CreateInput {
  count: number;
  name: string | null;
  namePrefix: string | null;
  audience: Audience | null | undefined;
  monthlyLimitCredits: number | null;
  dailyLimitCredits: number | null;
  expiresOn: string | null;
  /** Null: every model the wallet's credits allow. */
  models: string[] | null;
  /** The group the keys join (checked against the wallet when they are made); null: none. */
  groupId: string | null;
}

/** Only the fields sent: `undefined` = not sent (unchanged), `null` = clear. */
export interface PatchInput {
  name?: string | null;
  audience?: Audience | null;
  monthlyLimitCredits?: number | null;
  dailyLimitCredits?: number | null;
  expiresOn?: string | null;
  models?: string[] | null;
  groupId?: string | null;
}

const chars = (s: string) => [...s].length;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function body(raw: unknown): Record<string, unknown> {
  if (raw === undefined || raw === null || raw === '') return {};
  if (!isObject(raw)) throw errors.invalidRequest('The request body must be a JSON object.');
  return raw;
}

function unknownFields(b: Record<string, unknown>, allowed: string[], door: 'create' | 'patch') {
  for (const field of Object.keys(b)) {
    if (allowed.includes(field)) continue;
    if (door === 'patch' && (field === 'count' || field === 'name_prefix')) {
      throw errors.invalidRequest(`Unknown field '${field}': it is accepted only when creating keys.`, field);
    }
    throw errors.invalidRequest(`Unknown field '${field}'. Accepted fields: ${allowed.join(', ')}.`, field);
  }
}

function checkName(v: unknown, field: 'name' | 'name_prefix', max: number): string | null {
  if (v === null) return null;
  if (typeof v !== 'string') throw errors.invalidRequest(`${field} must be a string or null.`, field);
  const n = v.normalize('NFC');
  if (chars(n) === 0 || chars(n) > max) throw errors.invalidRequest(`${field} must be 1 to ${max} characters.`, field);
  // Leading spaces hide the prefix from a reader, not from the check.
  if (n.trimStart().startsWith(CHAT_KEY_NAME_PREFIX.normalize('NFC'))) {
    throw errors.invalidRequest(
      `${field} may not start with '${CHAT_KEY_NAME_PREFIX}': that prefix is reserved for team-chat keys.`,
      field,
    );
  }
  return n;
}

function checkLimit(v: unknown, field: string): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw errors.invalidRequest(`${field} must be a whole number of credits (0 or more), or null for no limit.`, field);
  }
  return v;
}

function checkAudience(v: unknown): Audience | null {
  if (v === null) return null;
  if (v !== 'student' && v !== 'teacher') throw errors.invalidRequest(`audience must be 'student' or 'teacher'.`, 'audience');
  return v;
}

/** A real calendar date YYYY-MM-DD, not before today (Korean). */
function checkExpiresOn(v: unknown, today: string): string | null {
  if (v === null) return null;
  const t = typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) ? Date.parse(`${v}T00:00:00Z`) : NaN;
  if (typeof v !== 'string' || Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== v) {
    throw errors.invalidRequest(`expires_on must be a date YYYY-MM-DD, or null for no expiry.`, 'expires_on');
  }
  if (v < today) {
    throw errors.invalidRequest(
      `expires_on ${v} is earlier than today (${today}, Korean time). To close a key now, use DELETE /v1/keys/{id}.`,
      'expires_on',
    );
  }
  return v;
}

function checkGroupId(v: unknown): string | null {
  if (v === null) return null;
  if (typeof v !== 'string' || !/^grp_[A-Za-z0-9]{1,64}$/.test(v)) {
    throw errors.invalidRequest(`group_id must be a key group's id (grp_…, from GET /v1/key-groups), or null for none.`, 'group_id');
  }
  return v;
}

/** A list of model ids and `prefix*` patterns; null or [] (every model) comes back as null. */
function checkModels(v: unknown): string[] | null {
  if (v === null) return null;
  const say = (why: string) =>
    errors.invalidRequest(
      `models must be a list of up to ${MAX_KEY_MODELS} model ids or patterns ending in * (such as "b-*"), or null for every model; ${why}.`,
      'models',
    );
  if (!Array.isArray(v)) throw say('it is not a list');
  if (v.length > MAX_KEY_MODELS) throw say(`${v.length} were sent`);
  for (const [i, entry] of v.entries()) {
    if (typeof entry !== 'string' || !isModelEntry(entry)) throw say(`models[${i}] (${JSON.stringify(entry)?.slice(0, 60)}) is not one`);
  }
  const list = [...new Set(v as string[])];
  return list.length === 0 ? null : list;
}

export function checkLimits(monthly: number | null, daily: number | null) {
  if (monthly != null && daily != null && daily > monthly) {
    throw errors.invalidRequest(
      `daily_limit_credits (${daily}) must not exceed monthly_limit_credits (${monthly}).`,
      'daily_limit_credits',
    );
  }
}

export function checkAudienceForWallet(audience: Audience | null | undefined, splitsUsage: boolean) {
  if (audience === 'student' && !splitsUsage) {
    throw errors.invalidRequest(
      `audience 'student' needs a wallet that splits usage between students and teachers; this wallet does not. ` +
        `Its operator makes such a wallet with \`npx gateway wallet create --splits-usage\` (splits_usage: true in the admin API).`,
      'audience',
    );
  }
}

export function parseCreate(raw: unknown, today: string): CreateInput {
  const b = body(raw);
  unknownFields(b, CREATE_FIELDS, 'create');
  let count = 1;
  if (b.count !== undefined) {
    if (typeof b.count !== 'number' || !Number.isInteger(b.count) || b.count < 1 || b.count > MAX_COUNT) {
      throw errors.invalidRequest(`count must be a whole number from 1 to ${MAX_COUNT}.`, 'count');
    }
    count = b.count;
  }
  const name = b.name === undefined ? null : checkName(b.name, 'name', MAX_NAME);
  const namePrefix = b.name_prefix === undefined ? null : checkName(b.name_prefix, 'name_prefix', MAX_NAME_PREFIX);
  const audience = b.audience === undefined ? undefined : checkAudience(b.audience);
  const monthly = b.monthly_limit_credits === undefined ? null : checkLimit(b.monthly_limit_credits, 'monthly_limit_credits');
  const daily = b.daily_limit_credits === undefined ? null : checkLimit(b.daily_limit_credits, 'daily_limit_credits');
  checkLimits(monthly, daily);
  const expiresOn = b.expires_on === undefined ? null : checkExpiresOn(b.expires_on, today);
  const models = b.models === undefined ? null : checkModels(b.models);
  const groupId = b.group_id === undefined ? null : checkGroupId(b.group_id);
  const input: CreateInput = {
    groupId,
    count,
    name,
    namePrefix,
    audience,
    monthlyLimitCredits: monthly,
    dailyLimitCredits: daily,
    expiresOn,
    models,
  };
  for (const n of keyNames(input)) {
    if (n !== null && chars(n) > MAX_NAME) {
      throw errors.invalidRequest(
        `The numbered names ('${n}') would exceed ${MAX_NAME} characters; use a shorter name or name_prefix (up to ${MAX_NAME_PREFIX}).`,
        b.name_prefix !== undefined ? 'name_prefix' : 'name',
      );
    }
  }
  return input;
}

/**
 * Names of the keys a create makes: one key takes `name` as is (falling back to name_prefix); several take
 * `<base> 1`, `<base> 2`, … with name_prefix as the base (falling back to name). No base: no names.
 */
export function keyNames(input: Pick<CreateInput, 'count' | 'name' | 'namePrefix'>): (string | null)[] {
  if (input.count === 1) return [input.name ?? input.namePrefix];
  const base = input.namePrefix ?? input.name;
  return Array.from({ length: input.count }, (_, i) => (base === null ? null : `${base} ${i + 1}`));
}

export function parsePatch(raw: unknown, today: string): PatchInput {
  const b = body(raw);
  unknownFields(b, PATCH_FIELDS, 'patch');
  const out: PatchInput = {};
  if (b.name !== undefined) out.name = checkName(b.name, 'name', MAX_NAME);
  if (b.audience !== undefined) out.audience = checkAudience(b.audience);
  if (b.monthly_limit_credits !== undefined) out.monthlyLimitCredits = checkLimit(b.monthly_limit_credits, 'monthly_limit_credits');
  if (b.daily_limit_credits !== undefined) out.dailyLimitCredits = checkLimit(b.daily_limit_credits, 'daily_limit_credits');
  if (b.expires_on !== undefined) out.expiresOn = checkExpiresOn(b.expires_on, today);
  if (b.models !== undefined) out.models = checkModels(b.models);
  if (b.group_id !== undefined) out.groupId = checkGroupId(b.group_id);
  return out;
}

/** Parses `limit` (1..500, default 100) and `offset` (0 or more, default 0) of GET /v1/keys. */
export function parseListQuery(query: unknown): { limit: number; offset: number } {
  const q = isObject(query) ? query : {};
  const num = (v: unknown, field: string, min: number, max: number, dflt: number) => {
    if (v === undefined || v === '') return dflt;
    const s = Array.isArray(v) ? v[0] : v;
    if (typeof s !== 'string' || !/^\d+$/.test(s) || Number(s) < min || Number(s) > max) {
      throw errors.invalidRequest(`${field} must be a whole number from ${min} to ${max}.`, field);
    }
    return Number(s);
  };
  return {
    limit: num(q.limit, 'limit', LIST_LIMIT.min, LIST_LIMIT.max, LIST_LIMIT.default),
    offset: num(q.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 0),
  };
}
