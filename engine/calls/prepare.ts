// Everything a call goes through before money moves: required fields, model lookup, refusals,
// then the door's request chain. Pure: no I/O, so a refusal can never have charged anything.
import { randomUUID } from 'node:crypto';
import { cloneJson } from '../../transforms/util/json.ts';
import type { DoorConfig } from '../catalog/config.ts';
import { resolveModel } from '../catalog/model-lookup.ts';
import type { Snapshot } from '../catalog/runtime.ts';
import { everyFormatsTools, imageReadingOf, wireFor } from '../catalog/wire-format.ts';
import type { Call, UploadedFile } from '../core/call.ts';
import { derivedFromText } from '../core/derived.ts';
import { errors } from '../core/errors.ts';
import { listAllows } from '../core/model-list.ts';
import type { Chain, Protocol } from '../core/protocol.ts';
import type { JsonObject } from '../core/types.ts';
import type { Caller } from '../money/accounts.ts';
import { checkFieldSpelling } from './field-spelling.ts';
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
  checkFieldSpelling(body, registry.protocols);
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
      tools: everyFormatsTools(),
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
