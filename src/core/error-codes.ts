/**
 * Every public error code, its HTTP status and meaning: the one table (STYLE §6).
 * Codes are stable: add, never rename. `docs/errors.md` is generated from this table's shape.
 */
export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    meaning: "The body, query or headers do not match the schema, or a JSON body holds a NUL (U+0000) or nests deeper than 64 levels.",
  },
  invalid_json: { status: 400, meaning: "The body is not valid JSON." },
  unauthorized: { status: 401, meaning: "Missing or unknown API key." },
  not_found: { status: 404, meaning: "No such route." },
  thread_not_found: { status: 404, meaning: "No such thread for this tenant." },
  run_not_found: { status: 404, meaning: "No such run for this tenant." },
  run_in_progress: { status: 409, meaning: "The thread already has an active run." },
  thread_has_branches: {
    status: 409,
    meaning: "The thread has branches that read its history through it; erase them first (`branch_ids`).",
  },
  state_version_conflict: {
    status: 409,
    meaning: "expected_state_version is not the thread's current version; reload or fork.",
  },
  idempotency_key_reused: {
    status: 409,
    meaning: "This run_id or Idempotency-Key was used for a different request.",
  },
  operation_unconfirmed: {
    status: 409,
    meaning: "An operation of the thread has an unknown outcome; confirm it before starting another run.",
  },
  run_not_interrupted: { status: 409, meaning: "The run is not waiting for an approval." },
  operation_not_confirmable: { status: 409, meaning: "Only an operation whose outcome is unknown can be confirmed." },
  checkpoint_not_found: { status: 404, meaning: "No such checkpoint in this thread's lineage." },
  operation_not_found: { status: 404, meaning: "No such operation on this thread for this tenant." },
  message_not_found: { status: 404, meaning: "No such message in this thread for this tenant (or it was deleted)." },
  run_not_terminal: { status: 409, meaning: "The run has not ended yet; a fragment is saved once its stream is final." },
  message_already_published: { status: 409, meaning: "The message was published; there is no fragment of it to save." },
  fragment_already_saved: { status: 409, meaning: "A fragment of this message was already saved (or saved and deleted)." },
  thread_moved_on: { status: 409, meaning: "Another run's messages came after this run's; its fragment can no longer be saved in order." },
  message_not_deletable: { status: 409, meaning: "Only a saved fragment can be deleted, not a published message." },
  run_not_rollbackable: {
    status: 409,
    meaning: "Only a run that ended cancelled or failed, with an input of its own, can be rolled back; a completed run's answer stays.",
  },
  rollback_conflict: {
    status: 409,
    meaning: "A message came after the run's input, or another run is active: history builds on the run, so it can no longer be rolled back.",
  },
  stream_expired: { status: 410, meaning: "The run's event buffer is gone; read the thread's history." },
  run_detail_expired: {
    status: 410,
    meaning: "The finished run's execution detail (its steps) outlived its retention; its status and stats stay (GET /v1/runs/{id}), its messages in the thread's history.",
  },
  fragment_out_of_range: {
    status: 422,
    meaning: "last_seq is outside the run's stream, or no delta of the message was streamed at or before it.",
  },
  agent_not_found: { status: 404, meaning: "No agent of that name is deployed (GET /v1/agents lists them)." },
  invalid_config: { status: 400, meaning: "The run's config does not match its agent's config schema; `issues` says where." },
  malformed_request: { status: 400, meaning: "The request is not valid HTTP (the server could not parse it)." },
  request_timeout: { status: 408, meaning: "The request was not received in time." },
  payload_too_large: { status: 413, meaning: "The body exceeds the size limit." },
  input_too_long: { status: 413, meaning: "The input message is longer than the server's limit (`limit` says how many characters)." },
  too_many_runs: {
    status: 429,
    meaning: "The tenant has as many active (or queued) runs as its limit allows; `Retry-After` says when to try again.",
  },
  too_many_streams: {
    status: 429,
    meaning: "The run (or the tenant) has as many open event streams on this server as its limit allows; close one.",
  },
  rate_limited: { status: 429, meaning: "The tenant sent more requests than its rate allows; `Retry-After` says when to try again." },
  unsupported_media_type: { status: 415, meaning: "The body must be application/json." },
  headers_too_large: { status: 431, meaning: "The request's headers exceed the server's limit." },
  internal_error: { status: 500, meaning: "An unexpected server failure; details are in the server log only." },
  invalid_frame: {
    status: 400,
    meaning: "A live session's frame is not a JSON object of a known type with the right fields (the socket stays open).",
  },
  frame_too_large: { status: 413, meaning: "A live session's frame exceeds 64 KiB (the socket stays open)." },
  shutting_down: { status: 503, meaning: "The server is draining and takes no new runs." },
  live_unavailable: {
    status: 503,
    meaning: "This process does not execute runs (an API-only process): live sessions connect to one that does.",
  },
  worker_unavailable: { status: 503, meaning: "The worker holding the run did not act on the request in time; try again." },
} as const satisfies Record<string, { status: number; meaning: string }>;

/** A stable error code. */
export type ErrorCode = keyof typeof ERROR_CODES;
