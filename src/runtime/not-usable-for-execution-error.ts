import type { NotUsableReason } from "../core/index.js";

const MARKER = Symbol.for("tidemark.not-usable-for-execution-error");

/**
 * A step tried to take a message as the input of its work (`step.objectOf`, and through it a
 * tool call) that may not be one: a saved fragment (above all of a stopped structured step's
 * object, which never validated), a deleted message, or text where an object is needed. Code
 * `not_usable_for_execution`; the step fails and nothing runs on the fragment.
 */
export class NotUsableForExecutionError extends Error {
  readonly [MARKER] = true;
  readonly code = "not_usable_for_execution";

  constructor(
    readonly messageId: string,
    readonly reason: NotUsableReason | "not_found",
  ) {
    super(`not_usable_for_execution: message ${messageId} ${EXPLANATIONS[reason]}`);
    this.name = "NotUsableForExecutionError";
  }

  /** Whether `value` is a NotUsableForExecutionError (also across module copies). */
  static isInstance(value: unknown): value is NotUsableForExecutionError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}

const EXPLANATIONS: Record<NotUsableReason | "not_found", string> = {
  fragment: "is a saved fragment of a stopped answer (what the user saw, never validated): it is not usable for execution.",
  deleted: "was deleted.",
  not_an_object: "is text, not a structured step's object.",
  not_found: "is not in this thread's history.",
};
