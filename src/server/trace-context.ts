import type { Context } from "hono";
import type { TraceCarrier } from "../runtime/index.js";

/** Longer than any valid header (`traceparent` is 55 characters; `tracestate` at most 32 members): not a trace context. */
const MAX_HEADER_CHARS = 1024;

/**
 * The request's W3C trace context (`traceparent`, `tracestate`), for the span of the run it
 * creates; the registered propagator validates it (without an SDK nothing reads it).
 */
export function traceContextOf(c: Context): TraceCarrier | undefined {
  const traceparent = c.req.header("traceparent");
  if (traceparent === undefined || traceparent.length > MAX_HEADER_CHARS) return undefined;
  const tracestate = c.req.header("tracestate");
  return tracestate !== undefined && tracestate.length <= MAX_HEADER_CHARS ? { traceparent, tracestate } : { traceparent };
}
