// Which environment turns traces on, where they go and in which encoding: the OTLP exporter specification's
// rules for the endpoint variables, and the refusal of a protocol this gateway does not offer.
import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVICE_NAME, telemetryConfig } from '../../engine/telemetry/config.ts';

describe('telemetryConfig', () => {
  it('is off without an OTLP endpoint, whatever else is set', () => {
    expect(telemetryConfig({})).toBeNull();
    expect(
      telemetryConfig({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }),
    ).toBeNull();
  });

  it('adds /v1/traces to the base endpoint and takes the traces endpoint as it is', () => {
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })?.tracesUrl).toBe('http://collector:4318/v1/traces');
    expect(
      telemetryConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://tempo.example/otlp/v1/traces',
      })?.tracesUrl,
    ).toBe('https://tempo.example/otlp/v1/traces');
  });

  it('defaults to protobuf, the package name and no captured content', () => {
    expect(telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({
      tracesUrl: 'http://c:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: DEFAULT_SERVICE_NAME,
      captureContent: false,
    });
    expect(DEFAULT_SERVICE_NAME).toBe('ai-gateway');
  });

  it('takes the traces protocol over the general one, and the capture switch only as true', () => {
    const c = telemetryConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'TRUE',
    });
    expect(c).toMatchObject({ protocol: 'http/json', captureContent: true });
    expect(
      telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: '1' })?.captureContent,
    ).toBe(false);
  });

  it('refuses grpc at start rather than exporting nowhere', () => {
    expect(() => telemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /grpc is not offered/,
    );
  });
});
