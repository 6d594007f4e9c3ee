/**
 * Delivers a Stop until the server has answered for the run's end. A cancel is idempotent, so
 * a request that got no reply (the network is down, the server failed) is simply sent again,
 * with backoff, for as long as it takes; each request asks the server to answer only once the
 * run is terminal (`?wait=`), so the loop ends on the truth: cancelled, or too late (completed).
 */
import type { TidemarkClient } from "./api-client.js";
import { TidemarkApiError } from "./tidemark-api-error.js";
import { TidemarkClientError } from "./tidemark-client-error.js";
import type { CancelView } from "./wire-types.js";

/** How long each cancel request asks the server to wait for the run's end. */
export const STOP_WAIT_MS = 10_000;
/** The pause after the first unanswered request; it doubles up to {@link STOP_MAX_DELAY_MS}. */
export const STOP_FIRST_DELAY_MS = 250;
export const STOP_MAX_DELAY_MS = 4_000;
/** The pause between replies that the run is not created yet (a Stop pressed before the create's reply). */
const PENDING_CREATION_DELAY_MS = 100;

/** What {@link deliverStop} needs from its session. */
export interface DeliverStopOptions {
  client: TidemarkClient;
  runId: string;
  reason?: string;
  /** Aborted when the session closes: no more requests; rejects with `session_closed`. */
  signal: AbortSignal;
  /** Whether the session moved on to another run, so the Stop's reply no longer matters. */
  isAbandoned(): boolean;
  /** Told of each request that got no reply. */
  onUnanswered(error: unknown): void;
  /** Told of each reply. */
  onReply(reply: CancelView): void;
  /** Resolves after `ms`, or earlier once the run's end is known otherwise (its events), so the next request gets the truth at once. */
  pause(ms: number): Promise<void>;
}

/** Sends the cancel until it is answered with a terminal status (or the session moved on); returns the last reply. */
export async function deliverStop(options: DeliverStopOptions): Promise<CancelView | undefined> {
  const { client, runId, signal } = options;
  let lastReply: CancelView | undefined;
  let delay = STOP_FIRST_DELAY_MS;
  for (;;) {
    if (signal.aborted) throw new TidemarkClientError("session_closed", "The session was closed before the server confirmed the Stop.");
    try {
      const reply = await client.cancelRun(runId, { reason: options.reason, waitMs: STOP_WAIT_MS, signal });
      lastReply = reply;
      delay = STOP_FIRST_DELAY_MS;
      options.onReply(reply);
      if (isTerminalReply(reply) || options.isAbandoned()) return reply;
      // Recorded, but not over yet (the wait ran out, or the create has not landed): ask again.
      if (reply.pending_creation) await options.pause(PENDING_CREATION_DELAY_MS);
    } catch (error) {
      if (signal.aborted) continue;
      if (!isRetryable(error)) throw error;
      options.onUnanswered(error);
      if (options.isAbandoned()) return lastReply;
      await options.pause(delay);
      delay = Math.min(delay * 2, STOP_MAX_DELAY_MS);
    }
  }
}

function isTerminalReply(reply: CancelView): boolean {
  return reply.status === "cancelled" || reply.status === "completed" || reply.status === "failed";
}

/** No reply (fetch's TypeError), or a server-side failure: the cancel may be sent again. A 4xx is the server's answer. */
function isRetryable(error: unknown): boolean {
  return !TidemarkApiError.isInstance(error) || error.status >= 500;
}
