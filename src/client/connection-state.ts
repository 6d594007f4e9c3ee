/**
 * The client's connection state machine (DESIGN §13), all transitions in one table.
 *
 * ```
 * idle ──► connecting ──► connected ◄──► reconnecting
 *              │              │               │
 *              └──────────────┴───────────────┴──► disconnected (the user closed it)
 *                                              └──► failed {reason} (the agent side is gone)
 * ```
 * `disconnected` is only ever user-initiated; an unexpected loss past the retry budget, an
 * expired stream or a refused request is `failed` with a reason. `idle` means no stream is open
 * (nothing to follow, or the run's stream ended after its terminal event).
 */

/** The states of one event stream. */
export const CONNECTION_STATES = ["connecting", "connected", "reconnecting", "disconnected", "failed"] as const;

/** Where one event stream is. */
export type ConnectionState = (typeof CONNECTION_STATES)[number];

/** A session's connection: a stream's state, or `idle` when none is open. */
export type ConnectionStatus = "idle" | ConnectionState;

/** Why a stream gave up: the agent side is unreachable, gone, or refused it. */
export interface ConnectionFailure {
  reason: "unreachable" | "stream_expired" | "not_found" | "unauthorized" | "server_error";
  message: string;
  attempts: number;
}

const TRANSITIONS: Readonly<Record<ConnectionStatus, readonly ConnectionStatus[]>> = {
  idle: ["connecting"],
  connecting: ["connected", "reconnecting", "disconnected", "failed", "idle"],
  connected: ["reconnecting", "disconnected", "failed", "idle"],
  reconnecting: ["connected", "disconnected", "failed", "idle"],
  // A new stream may always be opened again, by the user or after a reload.
  disconnected: ["connecting", "idle"],
  failed: ["connecting", "idle"],
};

/** Whether the connection machine allows `from → to` (staying put is always allowed). */
export function canConnectionTransition(from: ConnectionStatus, to: ConnectionStatus): boolean {
  return from === to || TRANSITIONS[from].includes(to);
}

/** The connection's flags, derived from its status alone. */
export interface ConnectionFlags {
  /** A stream is open and bytes are arriving. */
  isConnected: boolean;
  /** The stream is being (re)established; events may be late but nothing is lost. */
  isConnecting: boolean;
  /** The stream gave up: show `failure` and offer a reload. */
  isFailed: boolean;
  /** The user closed the stream. */
  isDisconnected: boolean;
}

/** Computes {@link ConnectionFlags} from `status`. */
export function connectionFlags(status: ConnectionStatus): ConnectionFlags {
  return {
    isConnected: status === "connected",
    isConnecting: status === "connecting" || status === "reconnecting",
    isFailed: status === "failed",
    isDisconnected: status === "disconnected",
  };
}
