// Whether traces are exported, and where, read here because turning telemetry on is this gateway's decision (off
// means no SDK at all); everything else the SDK reads itself from the OTEL_* variables.

import { SettingError } from '../core/setting-error.ts';

type Env = Record<string, string | undefined>;

type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TelemetryConfig {
  /** Where spans are POSTed: the traces endpoint as given, or the base endpoint with `/v1/traces`. */
  tracesUrl: string;
  protocol: OtlpProtocol;
  /** OTEL_SERVICE_NAME, else the package's name. */
  serviceName: string;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and answers go on the spans. */
  captureContent: boolean;
}

/** The package name: the service name when OTEL_SERVICE_NAME is not set. */
export const DEFAULT_SERVICE_NAME = 'ai-gateway';

/** The telemetry the environment asks for, or null when no OTLP endpoint is set (telemetry off). */
export function telemetryConfig(env: Env): TelemetryConfig | null {
  const tracesUrl = tracesUrlOf(env);
  if (!tracesUrl) return null;
  return {
    tracesUrl,
    protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
      ? protocolOf(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
      : protocolOf(env.OTEL_EXPORTER_OTLP_PROTOCOL, 'OTEL_EXPORTER_OTLP_PROTOCOL'),
    serviceName: env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME,
    captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim().toLowerCase() === 'true',
  };
}

/** The OTLP/HTTP exporter specification's rule: the signal endpoint as is, the base one with the signal's path. */
function tracesUrlOf(env: Env): string | null {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return null;
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

function protocolOf(raw: string | undefined, variable: string): OtlpProtocol {
  const value = raw?.trim() || 'http/protobuf';
  if (value === 'http/protobuf' || value === 'http/json') return value;
  throw new SettingError(`${variable} must be http/protobuf or http/json, not '${value}' (grpc is not offered)`);
}
