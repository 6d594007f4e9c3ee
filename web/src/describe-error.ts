import { TidemarkApiError } from "../../src/client/index.js";

/** What went wrong, in words a user can act on (the server's messages are already safe to show). */
export function describeError(error: unknown): string {
  if (TidemarkApiError.isInstance(error)) return error.message;
  if (error instanceof TypeError) return "The server cannot be reached. Check that Tidemark is running, then try again.";
  return error instanceof Error ? error.message : String(error);
}
