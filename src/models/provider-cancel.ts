import { randomUUID } from "node:crypto";

/** An explicit cancel call for gateways that keep generating after a disconnect. */
export interface ProviderCancelOptions {
  /** Where to POST `{"request_id": <token>}` when a request is stopped. */
  url: string;
  /** The request header that carries the token to the provider (default `x-request-id`). */
  tokenHeader?: string;
  /** Extra headers for the cancel call (e.g. authorization). */
  headers?: Record<string, string>;
  /** How long the cancel call may take (default 5 s). */
  timeoutMs?: number;
}

/** One in-flight request's token and the cancel to send if its signal aborts first. */
export interface CancelRegistration {
  /** Headers that name the request to the provider. */
  headers: Record<string, string>;
  /** Stop watching the signal (the request ended on its own). */
  release(): void;
}

/**
 * Gives a request a token and, if `signal` aborts while the request is in flight, POSTs the
 * cancel call for it. Each in-flight request of a run registers its own listener on the run's
 * signal, so one Stop cancels all of them concurrently.
 */
export function registerProviderCancel(
  options: ProviderCancelOptions | undefined,
  signal: AbortSignal,
  onError: (error: unknown) => void,
): CancelRegistration {
  if (!options) return { headers: {}, release: () => {} };
  const token = randomUUID();
  // Sent once every listener of this abort ran: a Stop that aborts several requests in one turn
  // closes all their sockets first, then the cancel calls go out (still all at once).
  const onAbort = (): void => void setImmediate(sendCancel);
  const sendCancel = (): void => {
    fetch(options.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...options.headers },
      body: JSON.stringify({ request_id: token }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 5_000),
    })
      .then((response) => response.body?.cancel())
      .catch(onError);
  };
  signal.addEventListener("abort", onAbort, { once: true });
  return {
    headers: { [options.tokenHeader ?? "x-request-id"]: token },
    release: () => signal.removeEventListener("abort", onAbort),
  };
}
