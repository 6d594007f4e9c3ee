import type { MessageRecord } from "../../core/index.js";

/** The fields of a published text message that vary: no tool call, no label. */
export type PlainMessageFields = Pick<
  MessageRecord,
  "tenantId" | "messageId" | "threadId" | "position" | "role" | "content" | "runId" | "stateVersion" | "checkpointId" | "createdAt"
> & { interrupted?: boolean };

/** A published text message (a run's input, a live turn's heard answer). */
export function plainMessage(fields: PlainMessageFields): MessageRecord {
  return {
    ...fields,
    publicationStatus: "published",
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    label: null,
    interrupted: fields.interrupted ?? false,
    format: "text",
  };
}
