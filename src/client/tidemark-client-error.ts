const MARKER = Symbol.for("tidemark.client.client-error");

/**
 * The stable codes of {@link TidemarkClientError}: refusals the client makes itself, before any
 * request (docs/client.md lists them). Where the server has a code for the same refusal, the
 * client uses it (`run_in_progress`, `run_not_interrupted`). New codes may be added; none is
 * ever renamed.
 */
export const CLIENT_ERROR_CODES = [
  /** The session's run is still active: stop it (and let the Stop land) first. */
  "run_in_progress",
  /** There is no saved point to continue or branch from (no Stop, or the thread moved on since). */
  "no_saved_point",
  /** There is no stopped draft to save. */
  "no_stopped_draft",
  /** The run is not waiting for an approve or reject. */
  "run_not_interrupted",
  /** The session was closed while the action waited (e.g. a Stop that had not reached the server). */
  "session_closed",
  /** The AI SDK transport found no thread for the chat. */
  "no_thread",
  /** The AI SDK transport's regenerate would replace a published answer, which Tidemark keeps. */
  "answer_published",
  /** The AI SDK transport was asked to send something that is not a user's text. */
  "no_user_text",
] as const;

/** One of {@link CLIENT_ERROR_CODES}. */
export type TidemarkClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

/**
 * A refusal by the client itself (the server was not asked): `code` is stable, `message` is
 * for people. The server's refusals are {@link TidemarkApiError}s.
 *
 * @example
 * try {
 *   await session.continueFromSavedPoint();
 * } catch (error) {
 *   if (TidemarkClientError.isInstance(error) && error.code === "run_in_progress") await session.stop();
 * }
 */
export class TidemarkClientError extends Error {
  readonly [MARKER] = true;
  readonly code: TidemarkClientErrorCode;

  constructor(code: TidemarkClientErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TidemarkClientError";
    this.code = code;
  }

  /** Whether `error` is a TidemarkClientError (also across module copies). */
  static isInstance(error: unknown): error is TidemarkClientError {
    return typeof error === "object" && error !== null && MARKER in error;
  }
}
