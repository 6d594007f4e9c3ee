import type { CheckpointRecord } from "../core/index.js";

/** One broken invariant, located as precisely as the rows allow. */
export interface Violation {
  /** The number of the invariant in docs/invariants.md (1 to 7 are the design contract's, 9 to 12 a plan's). */
  invariant: number;
  tenantId: string;
  threadId: string;
  runId?: string;
  messageId?: string;
  checkpointId?: string;
  operationId?: string;
  stepId?: string;
  detail: string;
}

/** A violation before it is placed in its thread. */
export type Located = Omit<Violation, "tenantId" | "threadId">;

/** A checkpoint of the thread's lineage by id, or undefined. */
export type FindCheckpoint = (checkpointId: string) => CheckpointRecord | undefined;
