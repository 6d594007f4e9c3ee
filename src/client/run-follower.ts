import type { TidemarkClient } from "./api-client.js";
import { openRunEventStream, type RunEventStream, type RunEventStreamOptions, type StreamNotice } from "./event-stream.js";

/** Follows one run's events at a time, for a session. */
export interface RunFollower {
  /** The run whose stream is open, or null. */
  readonly runId: string | null;
  /** Opens `runId`'s stream after `afterSeq`, replacing any open one. */
  follow(runId: string, afterSeq: number): void;
  /** Drops the open stream without a word: the session moved on, so its notices no longer count. */
  drop(): void;
  /** Closes the open stream on the user's behalf: its `disconnected` notice still counts. */
  close(): void;
}

/**
 * Creates a {@link RunFollower}: notices reach `onNotice` only from the stream opened last (a
 * replaced stream's late notices are ignored), and `onEnded` runs when that stream has ended.
 */
export function createRunFollower(
  client: TidemarkClient,
  streamOptions: Pick<RunEventStreamOptions, "heartbeatTimeoutMs" | "retry"> | undefined,
  onNotice: (notice: StreamNotice) => void,
  onEnded: () => void,
): RunFollower {
  let open: { runId: string; handle: RunEventStream } | null = null;
  // Set before the stream opens: its first notice (`connecting`) is delivered synchronously.
  let currentToken: object | null = null;

  function drop(): void {
    const dropped = open;
    open = null;
    currentToken = null;
    dropped?.handle.close();
  }

  return {
    get runId() {
      return open?.runId ?? null;
    },
    follow(runId, afterSeq) {
      drop();
      const token = {};
      currentToken = token;
      const handle = openRunEventStream(client, runId, (notice) => currentToken === token && onNotice(notice), { ...streamOptions, afterSeq });
      open = { runId, handle };
      void handle.done.then(() => {
        if (currentToken !== token) return;
        open = null;
        onEnded();
      });
    },
    drop,
    close: () => open?.handle.close(),
  };
}
