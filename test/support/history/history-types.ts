/**
 * What a history test records: every client operation with its invocation and its result (the
 * HTTP reply, or the events an SSE read saw), and the state read back once every run has ended.
 * The checker (history-properties.ts) judges these records only, never the store's rows, so a
 * violation is stated as a client would see it.
 */
import type { RunEvent } from "../../../src/core/index.js";

/** The kinds of client operation a history holds. */
export type OperationKind =
  | "create_thread"
  | "create_run"
  | "continue"
  | "stream"
  | "cancel"
  | "decide"
  | "fork"
  | "fragment"
  | "release"
  | "get_run"
  | "get_thread";

/** An HTTP reply as the client received it. */
export interface Reply {
  status: number;
  body: any;
}

/** One SSE read of a run: from `lastEventId` (sent as `Last-Event-ID`) until it ended or the client left. */
export interface StreamRead {
  runId: string;
  lastEventId: number;
  events: RunEvent[];
  /**
   * `terminal`: the run's last event came; `disconnected`: the client left after its quota; `idle`:
   * nothing came for a while, so it left; `closed`: the server ended the response before a terminal
   * event; `refused`: not 200.
   */
  outcome: "terminal" | "disconnected" | "idle" | "closed" | "refused";
  status: number;
}

/** One client operation: invoked at `invokedAt`, returned at `returnedAt` (ticks of one logical clock). */
export interface OperationRecord {
  index: number;
  /** Which client issued it (`final` reads and the drain are clients too). */
  client: string;
  kind: OperationKind;
  threadId?: string;
  runId?: string;
  request?: unknown;
  invokedAt: number;
  returnedAt: number;
  reply?: Reply;
  read?: StreamRead;
  /** Why it was not sent (e.g. no run to act on yet), or a transport error. */
  note?: string;
}

/** The state every run ended in, read after the sequence. */
export interface FinalState {
  /** `GET /v1/runs/{id}` of every run a client created. */
  runs: Map<string, Reply>;
  /** Each run's whole stream, read from seq 0 to its terminal event by a fresh client. */
  streams: Map<string, StreamRead>;
  /** `GET /v1/threads/{id}/history` and `/checkpoints` of every thread. */
  histories: Map<string, any>;
  checkpoints: Map<string, any>;
}

/** A recorded sequence: its operations in invocation order, and the state it left. */
export interface History {
  operations: OperationRecord[];
  final: FinalState;
}

/** A property the history broke, with the records that show it. */
export interface HistoryViolation {
  property: string;
  runId?: string;
  threadId?: string;
  detail: string;
  evidence: unknown[];
}

/** The event types that end a run's stream. */
export const TERMINAL_TYPES: ReadonlySet<string> = new Set(["run.completed", "run.cancelled", "run.failed"]);
