// Starts the OpenTelemetry SDK when the environment asks for traces (config.ts), and only then: its packages are
// loaded here, on demand, so a gateway with telemetry off never loads or runs them. The tracer is this
// gateway's own, not registered globally: two gateways in one process (tests) keep their spans apart.
import type { Attributes, DiagLogger } from '@opentelemetry/api';
import { type CallStart, CallTrace, type StepSpan, type Tracing } from './call-trace.ts';
import type { TelemetryConfig } from './config.ts';
import { JobTraces } from './job-traces.ts';

export interface Telemetry {
  readonly captureContent: boolean;
  startCall(start: CallStart): CallTrace;
  /** A span that starts a trace of its own (a video job settled by a process that did not take its request). */
  rootSpan(name: string, attrs: Attributes): StepSpan;
  /** Video jobs' traces, between their request and their background work. */
  readonly jobs: JobTraces;
  /** Exports every span ended so far. */
  flush(): Promise<void>;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}

const INSTRUMENTATION_SCOPE = 'ai-gateway';

export interface TelemetryLog {
  warn(obj: object, msg?: string): void;
}

export async function startTelemetry(config: TelemetryConfig, version: string, log: () => TelemetryLog): Promise<Telemetry> {
  const [{ diag, DiagLogLevel }, { BasicTracerProvider, BatchSpanProcessor }, resources, { W3CTraceContextPropagator }] = await Promise.all(
    [
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/core'),
    ],
  );
  // The SDK reports a failed export (a collector down, a wrong endpoint) and dropped spans only through its
  // diagnostics, silent unless given a logger: the gateway's own, at warn.
  diag.setLogger(diagnosticsTo(log), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  const exporter = await traceExporter(config);
  // The package's name and version first; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) over them.
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': version }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  // The sampler (OTEL_TRACES_SAMPLER) and the batch settings (OTEL_BSP_*) are the SDK's own reading of the environment.
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracing: Tracing = {
    tracer: provider.getTracer(INSTRUMENTATION_SCOPE, version),
    propagator: new W3CTraceContextPropagator(),
    captureContent: config.captureContent,
  };
  return {
    captureContent: config.captureContent,
    startCall: (start) => CallTrace.start(tracing, start),
    rootSpan: (name, attrs) => CallTrace.root(tracing, name, attrs),
    jobs: new JobTraces(),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

async function traceExporter(config: TelemetryConfig) {
  if (config.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter({ url: config.tracesUrl });
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter({ url: config.tracesUrl });
}

function diagnosticsTo(log: () => TelemetryLog): DiagLogger {
  const warn = (message: string) => log().warn({ otel: message }, 'telemetry: the OpenTelemetry SDK reports a problem');
  const ignore = () => undefined;
  return { error: warn, warn, info: ignore, debug: ignore, verbose: ignore };
}
