// One model call as a trace in the GenAI conventions, with admission, each route attempt and the settle as
// children. Made only when telemetry is on, so with it off each step costs one null check.
import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { AnswerFacts, Transcript } from '../core/transcript.ts';
import type { JsonObject, ModelEntry, Usage } from '../core/types.ts';
import { gatherEventFacts, gatherFacts, noFacts } from './answer-facts.ts';
import { chargeAttributes, ERROR_TYPE, GATEWAY, GENAI, HTTP_STATUS, operationOf, usageAttributes } from './genai.ts';

/** The SDK's parts a trace needs, made once at start (sdk.ts). */
export interface Tracing {
  tracer: Tracer;
  propagator: TextMapPropagator;
  captureContent: boolean;
}

type IncomingHeaders = Record<string, string | string[] | undefined>;

export interface CallStart {
  door: string;
  requestId: string;
  /** The client's request headers: its `traceparent` and `tracestate`, when sent, make this call part of its trace. */
  headers: IncomingHeaders;
}

/** What the call asked for, once it is prepared. */
interface CallRequest {
  model: ModelEntry;
  stream: boolean;
  maxTokens?: number | undefined;
  keyPrefix: string;
  walletId: string;
  /** The client's body: recorded only when the operator opted in to content capture. */
  body?: JsonObject;
  /** How the client's body reads (the door's format), and the vendor's answers and stream (the vendor's). */
  formats: { client: Transcript; vendor: Transcript };
}

interface CallEnd {
  status: number;
  errorType?: string | undefined;
  /** The route that answered (`a0`), and how many attempts failed before it. */
  route?: string | undefined;
  fallbackDepth?: number | undefined;
}

/** A child span for one step of the call (admission, settle). */
export class StepSpan {
  constructor(private readonly span: Span) {}

  set(attrs: Attributes): this {
    this.span.setAttributes(attrs);
    return this;
  }

  end(errorType?: string): void {
    if (errorType) failSpan(this.span, errorType);
    this.span.end();
  }
}

/** One route attempt: a CLIENT span whose context the vendor receives. */
export class AttemptSpan {
  constructor(
    private readonly span: Span,
    private readonly tracing: Tracing,
  ) {}

  /** `traceparent` (and `tracestate`) naming this attempt as the parent of the vendor's own spans. */
  headers(): Record<string, string> {
    const carrier: Record<string, string> = {};
    this.tracing.propagator.inject(trace.setSpan(ROOT_CONTEXT, this.span), carrier, defaultTextMapSetter);
    return carrier;
  }

  /** The route answered with something the call could use (a vendor 4xx included: it is the client's answer). */
  answered(status: number): void {
    this.span.setAttribute(HTTP_STATUS, status);
    this.span.end();
  }

  /** The route failed and the next one is asked: why, and the vendor's status when it answered one. */
  failed(reason: string, status?: number): void {
    if (status !== undefined) this.span.setAttribute(HTTP_STATUS, status);
    this.span.setAttribute(GATEWAY.retryReason, reason);
    failSpan(this.span, status !== undefined && status >= 400 ? String(status) : reason.replaceAll(' ', '_'));
    this.span.end();
  }
}

export class CallTrace {
  private facts: AnswerFacts = noFacts();
  /** The vendor's format, known once the request is prepared; an answer before that is not read. */
  private vendor: Transcript | undefined;
  private readonly startedAt = performance.now();
  private firstChunkSeen = false;

  private constructor(
    private readonly span: Span,
    private readonly context: Context,
    private readonly tracing: Tracing,
  ) {}

  /**
   * Starts the call's span, as a child of the client's span when its headers name one. SERVER, as the conventions
   * allow for a model call: the gateway serves the client's request, and each vendor call is a CLIENT span under it.
   */
  static start(tracing: Tracing, start: CallStart): CallTrace {
    const parent = tracing.propagator.extract(ROOT_CONTEXT, start.headers, defaultTextMapGetter);
    const span = tracing.tracer.startSpan(
      start.door,
      { kind: SpanKind.SERVER, attributes: { [GATEWAY.door]: start.door, [GATEWAY.requestId]: start.requestId } },
      parent,
    );
    return new CallTrace(span, trace.setSpan(parent, span), tracing);
  }

  /** A span with no parent: the first of a new trace. */
  static root(tracing: Tracing, name: string, attrs: Attributes): StepSpan {
    return new StepSpan(tracing.tracer.startSpan(name, { kind: SpanKind.INTERNAL, ...(attrs ? { attributes: attrs } : {}) }, ROOT_CONTEXT));
  }

  get traceId(): string {
    return this.span.spanContext().traceId;
  }

  /** Names the span `{operation} {model}` and records what was asked, once the request is prepared. */
  requested(r: CallRequest): void {
    const operation = operationOf(r.model);
    this.span.updateName(`${operation} ${r.model.id}`);
    this.span.setAttributes({
      [GENAI.operation]: operation,
      [GENAI.provider]: r.model.vendor,
      [GENAI.requestModel]: r.model.id,
      [GENAI.requestStream]: r.stream,
      [GATEWAY.keyPrefix]: r.keyPrefix,
      [GATEWAY.walletId]: r.walletId,
    });
    if (r.maxTokens !== undefined) this.span.setAttribute(GENAI.requestMaxTokens, r.maxTokens);
    this.vendor = r.formats.vendor;
    if (this.tracing.captureContent && r.body) this.span.setAttribute(GENAI.inputMessages, JSON.stringify(r.formats.client.input(r.body)));
  }

  set(attrs: Attributes): void {
    this.span.setAttributes(attrs);
  }

  step(name: string, attrs?: Attributes): StepSpan {
    return new StepSpan(
      this.tracing.tracer.startSpan(name, { kind: SpanKind.INTERNAL, ...(attrs ? { attributes: attrs } : {}) }, this.context),
    );
  }

  attempt(route: string, depth: number): AttemptSpan {
    const span = this.tracing.tracer.startSpan(
      `attempt ${route}`,
      { kind: SpanKind.CLIENT, attributes: { [GATEWAY.route]: route, [GATEWAY.attempt]: depth } },
      this.context,
    );
    return new AttemptSpan(span, this.tracing);
  }

  /** A whole answer from the vendor: its id, model and finish reasons (and its content, when captured). */
  answered(answer: JsonObject): void {
    if (!this.vendor) return;
    this.facts = gatherFacts(this.facts, answer, this.vendor);
    if (this.tracing.captureContent) this.span.setAttribute(GENAI.outputMessages, JSON.stringify(this.vendor.output(answer)));
  }

  /** One event of a vendor stream. */
  streamEvent(data: string): void {
    if (this.vendor) this.facts = gatherEventFacts(this.facts, data, this.vendor);
  }

  /** The first frame went to the client: the time to first chunk, in seconds as the conventions count it. */
  firstChunk(): void {
    if (this.firstChunkSeen) return;
    this.firstChunkSeen = true;
    this.span.setAttribute(GENAI.timeToFirstChunk, (performance.now() - this.startedAt) / 1000);
    this.span.addEvent('first chunk');
  }

  usage(usage: Usage): void {
    this.span.setAttributes(usageAttributes(usage));
  }

  charged(chargedNano: bigint): void {
    this.span.setAttributes(chargeAttributes(chargedNano));
  }

  end(e: CallEnd): void {
    const { id, model, finishReasons } = this.facts;
    if (id) this.span.setAttribute(GENAI.responseId, id);
    if (model) this.span.setAttribute(GENAI.responseModel, model);
    if (finishReasons.length) this.span.setAttribute(GENAI.finishReasons, finishReasons);
    this.span.setAttribute(HTTP_STATUS, e.status);
    if (e.route) this.span.setAttribute(GATEWAY.route, e.route);
    if (e.fallbackDepth !== undefined) this.span.setAttribute(GATEWAY.fallbackDepth, e.fallbackDepth);
    const errorType = e.errorType ?? (e.status >= 400 ? String(e.status) : undefined);
    if (errorType) failSpan(this.span, errorType);
    this.span.end();
  }
}

function failSpan(span: Span, errorType: string): void {
  span.setAttribute(ERROR_TYPE, errorType);
  span.setStatus({ code: SpanStatusCode.ERROR });
}
