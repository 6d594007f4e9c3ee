import type { MessageRecord } from "./records.js";

/** Why a message may not be taken as the input of a tool or an agent's step. */
export type NotUsableReason = "fragment" | "deleted" | "not_an_object";

/**
 * Whether a tool or an agent may take `message` as its input (issue 19): only a published message
 * is, and only a published JSON one as an object. A saved fragment of a stopped structured step
 * is what the user saw of an object that never validated: shown, kept, never executed.
 * The one rule: the wire's `usable_for_execution`, the model context's label and
 * `step.objectOf` all ask here.
 */
export function notUsableReason(message: Pick<MessageRecord, "publicationStatus" | "format">, asObject: boolean): NotUsableReason | undefined {
  if (message.publicationStatus === "fragment") return "fragment";
  if (message.publicationStatus === "deleted") return "deleted";
  if (asObject && message.format !== "json") return "not_an_object";
  return undefined;
}

/** Whether `message` may be a tool's or a step's input (the wire's `usable_for_execution`). */
export function isUsableForExecution(message: Pick<MessageRecord, "publicationStatus" | "format">): boolean {
  return notUsableReason(message, false) === undefined;
}
