// Chat door → vendor A, last step: what is left of the chat body is either a native field, a chat field this
// step consumes, or a chat field the translation cannot carry — refused with 400 naming it and pointing to
// /v1/messages instead of being dropped silently (a
// client whose response_format or logprobs vanished would get a different answer and never know). Earlier steps have already moved messages,
// system, tools, tool_choice, parallel_tool_calls, stop, max_(completion_)tokens and reasoning_effort.
//
// Decisions, parameter by parameter:
//   stream_options        consumed: include_usage is read by the stream translator from the client body; not sent.
//   user                  → metadata.user_id (the native per-end-user id). safety_identifier, its successor,
//                           → metadata.user_id when user is absent.
//   metadata              removed: the chat format stores it only with stored completions (store: true is
//                           refused below), so it never affects the answer; the native metadata holds user_id only.
//   n                     1 or null removed; > 1 refused (the native format returns one answer).
//   logprobs, top_logprobs  false/0/null removed; requesting log probabilities refused (the vendor has none).
//   frequency_penalty, presence_penalty  0/null removed; non-zero refused (no native equivalent).
//   seed                  null removed; any value refused (no native determinism control).
//   logit_bias            null or {} removed; non-empty refused.
//   response_format       text removed; json_schema → output_config.format {type:'json_schema', schema}
//                           (native structured outputs); json_object refused (no native mode without a schema:
//                           send json_schema).
//   temperature           kept (native 0–1); a value above 1 refused rather than clamped.
//   store                 false/null removed; true refused (no stored completions).
//   modalities            ['text'] removed; audio refused. audio, prediction, verbosity, moderation,
//                           web_search_options, functions, function_call: refused unless null.
//   prompt_cache_key      removed: a cache-routing hint; vendor A caches by cache_control breakpoints instead.
//   prompt_cache_retention  'in_memory'/null removed; '24h' refused (use cache_control ttl '1h').
//   prompt_cache_options  refused unless null (use cache_control).
//   service_tier          kept: the door's rewrites (config/doors.yaml) have put it in the native words, the
//                           standard tier asked for by name (standard_only), so the vendor never picks another.
//   deferred              removed: the door has refused every value other than false.
//   thinking, top_k       native fields some chat clients send for vendor A (LiteLLM-compatible): passed on.
//   anything else         refused, naming the parameter.
import type { RequestTransform } from '../../../engine/core/call.ts';
import type { Step } from '../../../engine/core/protocol.ts';
import type { JsonObject, JsonValue } from '../../../engine/core/types.ts';
import { bad, describe, isObject } from '../../util/json.ts';
import type { OutputConfig } from './request-bodies.ts';

const NATIVE = new Set([
  'model',
  'messages',
  'system',
  'max_tokens',
  'stream',
  'temperature',
  'top_p',
  'top_k',
  'stop_sequences',
  'tools',
  'tool_choice',
  'metadata',
  'output_config',
  'thinking',
  'cache_control',
  'service_tier',
]);

const USE_MESSAGES = 'It cannot be carried to vendor A models on /v1/chat/completions; use /v1/messages for native parameters.';

const refuse = (param: string, value: JsonValue, why: string): never => {
  throw bad(`Parameter '${param}' (${describe(value)}) is not supported for this model: ${why} ${USE_MESSAGES}`, param);
};

const isNull = (v: JsonValue | undefined) => v === undefined || v === null;

type Rule = (value: JsonValue, body: JsonObject, param: string) => void;

const removedWhen =
  (ok: (v: JsonValue) => boolean, why: string): Rule =>
  (v, _body, param) => {
    if (!ok(v)) refuse(param, v, why);
  };

const RULES: Record<string, Rule> = {
  stream_options: () => undefined,
  deferred: () => undefined,
  prompt_cache_key: () => undefined,
  metadata: () => undefined,
  user: () => undefined,
  safety_identifier: () => undefined,
  n: removedWhen((v) => v === null || v === 1, 'the native format returns exactly one choice; send n=1.'),
  logprobs: removedWhen((v) => v === null || v === false, 'log probabilities are not returned by this vendor.'),
  top_logprobs: removedWhen((v) => v === null || v === 0, 'log probabilities are not returned by this vendor.'),
  frequency_penalty: removedWhen((v) => v === null || v === 0, 'there is no frequency penalty in the native format.'),
  presence_penalty: removedWhen((v) => v === null || v === 0, 'there is no presence penalty in the native format.'),
  seed: removedWhen((v) => v === null, 'there is no seed in the native format.'),
  logit_bias: removedWhen(
    (v) => v === null || (isObject(v) && Object.keys(v).length === 0),
    'there is no logit bias in the native format.',
  ),
  store: removedWhen((v) => v === null || v === false, 'stored completions are not offered.'),
  modalities: removedWhen(
    (v) => v === null || (Array.isArray(v) && v.every((m) => m === 'text')),
    'only text output is produced on this door.',
  ),
  audio: removedWhen((v) => v === null, 'audio output is not produced on this door.'),
  prediction: removedWhen((v) => v === null, 'predicted outputs are not supported by this vendor.'),
  verbosity: removedWhen((v) => v === null, 'there is no verbosity setting in the native format.'),
  moderation: removedWhen((v) => v === null, 'moderated completions are not offered for this vendor.'),
  web_search_options: removedWhen((v) => v === null, 'web search is offered on /v1/messages as the web_search tool.'),
  functions: removedWhen((v) => v === null, 'the deprecated functions field is not translated; send tools.'),
  function_call: removedWhen((v) => v === null, 'the deprecated function_call field is not translated; send tool_choice.'),
  prompt_cache_retention: removedWhen(
    (v) => v === null || v === 'in_memory',
    "extended retention is set per breakpoint with cache_control {type:'ephemeral', ttl:'1h'}.",
  ),
  prompt_cache_options: removedWhen((v) => v === null, "caching is set per part with cache_control {type:'ephemeral'}."),
  response_format: (v, body) => {
    if (v === null || (isObject(v) && v.type === 'text')) return;
    if (isObject(v) && v.type === 'json_schema') {
      const schema = isObject(v.json_schema) ? v.json_schema.schema : undefined;
      if (!isObject(schema)) throw bad('response_format.json_schema.schema must be a JSON Schema object.', 'response_format');
      const config = isObject(body.output_config) ? body.output_config : {};
      const output: OutputConfig = { ...config, format: { type: 'json_schema', schema } };
      body.output_config = output;
      return;
    }
    refuse(
      'response_format',
      v,
      "only {type:'json_schema'} (mapped to native structured outputs) and {type:'text'} are translated; send json_schema with a schema instead of json_object.",
    );
  },
};

const run: RequestTransform = (call) => {
  const body = call.body;
  const user =
    typeof body.user === 'string' && body.user !== ''
      ? body.user
      : typeof body.safety_identifier === 'string' && body.safety_identifier !== ''
        ? body.safety_identifier
        : undefined;
  if (!isNull(body.user) && typeof body.user !== 'string') throw bad('user must be a string.', 'user');
  for (const key of Object.keys(body)) {
    if (NATIVE.has(key) && key !== 'metadata') continue;
    const rule = RULES[key];
    if (!rule) {
      throw bad(`Parameter '${key}' is not a chat-completions parameter this door translates for vendor A models. ${USE_MESSAGES}`, key);
    }
    rule(body[key]!, body, key);
    delete body[key];
  }
  if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 1)) {
    refuse('temperature', body.temperature, 'vendor A models accept temperature from 0 to 1 and the value is not clamped.');
  }
  if (user !== undefined) body.metadata = { user_id: user };
  return call;
};

/** The step as chains name it. */
export const chatParamsToNative: Step<RequestTransform> = { name: 'chat-params-to-native', run };
