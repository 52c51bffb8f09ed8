// Everything a call goes through before money moves: required fields, model lookup, refusals,
// then the door's request chain. Pure: no I/O, so a refusal can never have charged anything.
import { randomUUID } from 'node:crypto';
import { cloneJson, isObject } from '../../transforms/util/json.ts';
import type { DoorConfig } from '../catalog/config.ts';
import { resolveModel } from '../catalog/model-lookup.ts';
import type { Snapshot } from '../catalog/runtime.ts';
import { imageReadingOf, wireFor } from '../catalog/wire-format.ts';
import type { Call, UploadedFile } from '../core/call.ts';
import { derivedFromText } from '../core/derived.ts';
import { errors } from '../core/errors.ts';
import { listAllows } from '../core/model-list.ts';
import type { Chain, Protocol } from '../core/protocol.ts';
import type { JsonObject } from '../core/types.ts';
import type { Caller } from '../money/accounts.ts';
import { checkModelFields } from './model-fields.ts';
import { doorModelRules, type RequestView, refusalError } from './refusals.ts';

/** The wire formats a call may reach (transforms/protocols/index.ts), each with its chains. */
export interface TransformRegistry {
  protocols: Record<string, Protocol>;
}

export interface PreparedCall {
  call: Call;
  /** The door's chain to the vendor (declared by the format's folder), and the format's name. */
  protocol: Chain;
  protocolName: string;
  /** The vendor's wire format that chain reaches (transforms/protocols/). */
  wire: Protocol;
}

export function prepareCall(
  snap: Snapshot,
  door: DoorConfig,
  body: JsonObject,
  headers: RequestView['headers'],
  caller: Caller,
  registry: TransformRegistry,
  opts: { now: Date; files?: Record<string, UploadedFile> | undefined },
): PreparedCall {
  checkFieldSpelling(body);
  checkRequired(door, body, headers);
  const model = resolveModel(snap.catalog, snap.config, door, body.model ?? door.default_model, opts.now);
  if (!listAllows(caller.models, model.id)) throw errors.modelNotOnKeyList(model.id, caller.models ?? []);
  const view: RequestView = { body, headers, caller };
  const { rules, refusals } = doorModelRules(snap.config, door, model);
  const refused = refusalError(refusals, view);
  if (refused) throw refused;

  const reached = wireFor(door, model.vendor, registry.protocols);
  if (!reached) throw errors.unavailable(`No protocol is configured for vendor ${model.vendor} on ${door.path}.`);
  const { name: protocolName, wire, chain: protocol } = reached;
  const stream = streamAsked(body.stream, opts.files !== undefined);
  if (stream && !protocol.stream) {
    throw errors.invalidRequest(`stream: true is not offered on ${door.path}; the answer comes whole. Omit stream.`, 'stream');
  }

  const limits = snap.config.limits;
  const reservation = snap.config.billing.reservation;
  const honoured = wire.limits;
  const serverToolCap = {
    calls: reservation.max_server_tool_calls,
    ...(honoured.tool_uses ? { perTool: honoured.tool_uses } : {}),
    ...(honoured.tool_calls ? { perCall: honoured.tool_calls } : {}),
    ...(honoured.tool_results ? { results: { field: honoured.tool_results, count: reservation.file_search_results } } : {}),
  };
  const capField = reservation.output_cap_written?.[model.vendor];
  const outputCap = capField ? { write: capField, fields: honoured.output ?? [] } : undefined;
  // The chain changes its own copy, which names the model resolved.
  const sentBody = cloneJson(body);
  sentBody.model = model.id;
  let call: Call = {
    id: randomUUID(),
    door: door.name,
    model,
    rules,
    client: body,
    body: sentBody,
    ...(opts.files ? { files: opts.files } : {}),
    stream,
    upstreamHeaders: {},
    notes: {},
    settings: {
      defaultMaxTokens: limits.default_max_tokens,
      serverToolCap,
      ...(outputCap ? { outputCap } : {}),
      effortCarriedSince: limits.effort_carried_since,
      now: opts.now,
      images: imageReadingOf(wire),
    },
  };
  for (const step of protocol.request) call = step.run(call);
  checkModelFields(wire.modelFields, call, caller, snap.catalog, opts.now);
  return { call, protocol, protocolName, wire };
}

const headerPattern = derivedFromText((source) => new RegExp(source));

function checkRequired(door: DoorConfig, body: JsonObject, headers: RequestView['headers']): void {
  for (const field of door.requires) {
    if (field === 'model' && door.default_model) continue;
    const v = body[field];
    if (v === undefined || v === null || v === '') throw errors.invalidRequest(`${field} is required.`, field);
  }
  for (const h of door.requires_headers) {
    const raw = headers[h.name];
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (!value || !headerPattern(h.pattern).test(value)) throw errors.invalidRequest(h.say);
  }
}

/**
 * Whether the body asks for a stream. Only a boolean (or null, or nothing) is taken, and a form's "true" or
 * "false": a vendor that reads "true", 1 or "yes" as true would stream an answer that the gateway, not asked for
 * a stream, reads as one whole body, fails to read, and cannot charge for.
 */
function streamAsked(value: unknown, inForm: boolean): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (value === true) return true;
  if (inForm && (value === 'true' || value === 'false')) return value === 'true';
  throw errors.invalidRequest(`stream must be true or false, not ${JSON.stringify(value).slice(0, 40)}.`, 'stream');
}

/**
 * Every vendor format spells its fields in lowercase. A field spelled otherwise (`N`, `MAX_TOKENS`, `ſtream` with
 * a long s) is refused: the gateway reads the exact spelling only, while a vendor whose JSON decoder matches
 * names regardless of case and compatibility form (Go's, the last key winning) would read it as `n`,
 * `max_tokens` or `stream`, and do more than the hold covers or stream an answer the gateway cannot read.
 */
const PLAIN_NAME = /^[a-z0-9_]*$/;

function checkFieldSpelling(body: JsonObject): void {
  checkNames(body);
  for (const list of VENDOR_NAMED_LISTS) {
    const items = body[list];
    if (!Array.isArray(items)) continue;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (!isObject(item)) continue;
      checkNames(item, list, i);
      if ((list !== 'messages' && list !== 'input') || !Array.isArray(item.content)) continue;
      for (let j = 0; j < item.content.length; j++) {
        const block = item.content[j];
        if (isObject(block)) checkNames(block, list, i, j);
      }
    }
  }
}

/**
 * The lists whose entries' field names the vendor's format defines and where bounds are read (a tool's `max_uses`,
 * a block's `cache_control`): each tool, each system block, each message or input item and its content blocks. Not
 * the objects a client names itself (a function's parameter schema, a tool call's arguments).
 */
const VENDOR_NAMED_LISTS = ['tools', 'system', 'messages', 'input'] as const;

/** Refuses a name of `part`, the body or the entry `item` of `list` (or its content block `block`), that is not lowercase. */
function checkNames(part: JsonObject, list?: string, item?: number, block?: number): void {
  for (const key in part) {
    if (PLAIN_NAME.test(key)) continue; // folds to itself: no need to normalise every call's names
    const plain = key.normalize('NFKC').toLowerCase();
    if (plain === key) continue;
    const at = list === undefined ? '' : `${list}[${item}].${block === undefined ? '' : `content[${block}].`}`;
    const shown = (k: string) => `${at}${k.slice(0, 60)}`;
    throw errors.invalidRequest(`Field names are lowercase: send '${shown(plain)}', not '${shown(key)}'.`, shown(key));
  }
}
