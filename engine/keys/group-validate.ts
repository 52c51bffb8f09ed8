// The body fields of POST and PATCH /v1/key-groups, as checks: 400 invalid_request_error naming the field.
import { errors } from '../core/errors.ts';
import { checkLimits } from './validate.ts';

const MAX_GROUP_NAME = 40;

/** The body fields of the group doors and their JSON Schema (GET /openapi.json publishes it). */
export const GROUP_BODY_FIELDS: Record<string, Record<string, unknown>> = {
  name: { type: 'string', minLength: 1, maxLength: MAX_GROUP_NAME, description: 'Required on create.' },
  monthly_limit_credits: { type: ['integer', 'null'], minimum: 0, description: "Caps the sum of the group's keys' use this month." },
  daily_limit_credits: { type: ['integer', 'null'], minimum: 0, description: 'Not above monthly_limit_credits.' },
};

/** Only the fields sent: `undefined` = not sent (unchanged), `null` = no limit. */
export interface GroupInput {
  name?: string;
  monthlyLimitCredits?: number | null;
  dailyLimitCredits?: number | null;
  /**
   * Refuse a name another live group of the wallet has. The dashboard sets it (people pick a class by its name
   * there); the API does not, since its clients name groups by id and the interface promises no such rule.
   */
  distinctName?: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function limit(v: unknown, field: string): number | null {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw errors.invalidRequest(`${field} must be a whole number of credits (0 or more), or null for no limit.`, field);
  }
  return v;
}

function name(v: unknown): string {
  const n = typeof v === 'string' ? v.normalize('NFC').trim() : null;
  if (n === null || n.length === 0 || [...n].length > MAX_GROUP_NAME) {
    throw errors.invalidRequest(`name must be 1 to ${MAX_GROUP_NAME} characters.`, 'name');
  }
  return n;
}

/** PATCH /v1/key-groups/{id}: the fields sent, checked. */
export function parseGroupPatch(raw: unknown): GroupInput {
  const b = raw === undefined || raw === null || raw === '' ? {} : raw;
  if (!isObject(b)) throw errors.invalidRequest('The request body must be a JSON object.');
  for (const field of Object.keys(b)) {
    if (!(field in GROUP_BODY_FIELDS)) {
      throw errors.invalidRequest(`Unknown field '${field}'. Accepted fields: ${Object.keys(GROUP_BODY_FIELDS).join(', ')}.`, field);
    }
  }
  const out: GroupInput = {};
  if (b.name !== undefined) out.name = name(b.name);
  if (b.monthly_limit_credits !== undefined) out.monthlyLimitCredits = limit(b.monthly_limit_credits, 'monthly_limit_credits');
  if (b.daily_limit_credits !== undefined) out.dailyLimitCredits = limit(b.daily_limit_credits, 'daily_limit_credits');
  return out;
}

/** POST /v1/key-groups: `name` required, limits optional (none when absent). */
export function parseGroupCreate(raw: unknown): GroupInput & { name: string } {
  const input = parseGroupPatch(raw);
  if (input.name === undefined)
    throw errors.invalidRequest(`name is required: the group (class) name, 1 to ${MAX_GROUP_NAME} characters.`, 'name');
  checkLimits(input.monthlyLimitCredits ?? null, input.dailyLimitCredits ?? null);
  return { ...input, name: input.name };
}
