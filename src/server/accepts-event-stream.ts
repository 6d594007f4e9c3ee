/**
 * Whether a request's `Accept` header asks for an SSE stream: it lists `text/event-stream` by name
 * (not through a wildcard, so a client that accepts any type keeps the JSON it had), with a q above 0.
 */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  for (const range of accept.split(",")) {
    const [type, ...parameters] = range.split(";");
    if (type?.trim().toLowerCase() !== "text/event-stream") continue;
    const quality = parameters.map((parameter) => parameter.trim().toLowerCase()).find((parameter) => parameter.startsWith("q="));
    return quality === undefined || Number(quality.slice(2)) > 0;
  }
  return false;
}
