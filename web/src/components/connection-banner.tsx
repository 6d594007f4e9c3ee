/** Says when the live stream is not live: reconnecting, or failed with its reason. */
import type { ConnectionFailure, ConnectionStatus } from "../../../src/client/index.js";

export interface ConnectionBannerProps {
  status: ConnectionStatus;
  failure: ConnectionFailure | null;
  onReload(): void;
}

const FAILURE_TEXT: Record<ConnectionFailure["reason"], string> = {
  unreachable: "the server cannot be reached",
  stream_expired: "the live stream is gone; the saved history is still there",
  not_found: "the server does not know this run any more",
  unauthorized: "the server refused the API key",
  server_error: "the server answered with an error",
};

/** Nothing while connected or idle; a polite status while reconnecting; an alert when failed. */
export function ConnectionBanner({ status, failure, onReload }: ConnectionBannerProps) {
  if (status === "reconnecting") {
    return (
      <div className="banner reconnecting" role="status">
        Reconnecting to the live stream… The run goes on on the server; nothing is lost.
      </div>
    );
  }
  if (status === "failed") {
    return (
      <div className="banner failed" role="alert">
        <span>
          Connection failed: {failure ? FAILURE_TEXT[failure.reason] : "the stream ended unexpectedly"}
          {failure && failure.attempts > 1 ? ` (${failure.attempts} attempts)` : ""}. The run may still be going on the server: reload to
          see where it stands.
        </span>
        <button type="button" onClick={onReload}>
          Reload the thread
        </button>
      </div>
    );
  }
  return null;
}
