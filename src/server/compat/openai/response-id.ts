/**
 * OpenAI response ids are Tidemark run ids under OpenAI's prefix: `resp_<the run id's suffix>`
 * (`run_01jd8x…` is `resp_01jd8x…`). Nothing is stored for the mapping, so every run, however it
 * was started, is a response, and a response id names exactly one run of the caller's tenant.
 */
import { isWellFormedId, NO_SUCH_ID } from "../../path-id.js";

const RESPONSE_PREFIX = "resp_";
const RUN_PREFIX = "run_";

/** The response id of a run. */
export function responseIdOf(runId: string): string {
  return RESPONSE_PREFIX + runId.slice(RUN_PREFIX.length);
}

/** The run a response id names; a malformed id names no run ({@link NO_SUCH_ID}), like an unknown one. */
export function runIdOf(responseId: string): string {
  if (!responseId.startsWith(RESPONSE_PREFIX)) return NO_SUCH_ID;
  const runId = RUN_PREFIX + responseId.slice(RESPONSE_PREFIX.length);
  return isWellFormedId(runId, "run") ? runId : NO_SUCH_ID;
}
