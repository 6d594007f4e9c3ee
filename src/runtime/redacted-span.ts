import { context, trace, type Attributes, type AttributeValue, type Context, type Span, type SpanStatus } from "@opentelemetry/api";
import type { Redactor } from "../core/redactor.js";

/** The instrumentation scope name of every Tidemark span. */
export const TRACER_NAME = "tidemark";

// Looked up per span, not cached: an SDK registered (or replaced) later is picked up.
function tracer() {
  return trace.getTracer(TRACER_NAME);
}

function redactAttribute(redactor: Redactor, value: AttributeValue): AttributeValue {
  if (typeof value === "string") return redactor(value);
  if (Array.isArray(value) && value.some((item) => typeof item === "string")) {
    return (value as (string | null | undefined)[]).map((item) => (typeof item === "string" ? redactor(item) : item)) as AttributeValue;
  }
  return value;
}

function redactAttributes(redactor: Redactor, attributes: Attributes): Attributes {
  const redacted: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) redacted[key] = redactAttribute(redactor, value);
  return redacted;
}

/**
 * A span whose every attribute, event attribute and status message passes through the redactor
 * before the OpenTelemetry SDK sees it: Tidemark's span helpers write only through this, the one
 * place span data is redacted.
 */
export class RedactedSpan {
  /** The span itself, to parent others under (never written to directly). */
  readonly span: Span;
  readonly #redactor: Redactor;

  private constructor(span: Span, redactor: Redactor) {
    this.span = span;
    this.#redactor = redactor;
  }

  /** Starts a span under `parent` (a span, or a context; the active one when left out). */
  static start(redactor: Redactor, name: string, attributes: Attributes, parent?: RedactedSpan | Context): RedactedSpan {
    const parentContext = parent instanceof RedactedSpan ? trace.setSpan(context.active(), parent.span) : (parent ?? context.active());
    return new RedactedSpan(tracer().startSpan(name, { attributes: redactAttributes(redactor, attributes) }, parentContext), redactor);
  }

  setAttribute(key: string, value: AttributeValue): void {
    this.span.setAttribute(key, redactAttribute(this.#redactor, value));
  }

  setAttributes(attributes: Attributes): void {
    this.span.setAttributes(redactAttributes(this.#redactor, attributes));
  }

  addEvent(name: string, attributes: Attributes = {}): void {
    this.span.addEvent(name, redactAttributes(this.#redactor, attributes));
  }

  setStatus(status: SpanStatus): void {
    this.span.setStatus(status.message === undefined ? status : { ...status, message: this.#redactor(status.message) });
  }

  end(): void {
    this.span.end();
  }
}
