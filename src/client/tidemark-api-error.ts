const MARKER = Symbol.for("tidemark.client.api-error");

/**
 * A non-2xx reply of the Tidemark API: `code` is the server's stable error code
 * (`state_version_conflict`, `run_in_progress`, …; docs/errors.md) and `details` the rest of
 * its JSON body (e.g. `current_state_version`, `allowed_actions`). A reply that is not the
 * server's JSON error gets the code `http_<status>`.
 */
export class TidemarkApiError extends Error {
  readonly [MARKER] = true;
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;

  constructor(status: number, code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "TidemarkApiError";
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** Whether `error` is a TidemarkApiError (also across module copies). */
  static isInstance(error: unknown): error is TidemarkApiError {
    return typeof error === "object" && error !== null && MARKER in error;
  }

  /** Reads an error reply: the server's `{error, message, …details}`, or a generic one. */
  static async fromResponse(response: Response): Promise<TidemarkApiError> {
    const text = await response.text().catch(() => "");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (typeof body === "object" && body !== null && typeof (body as { error?: unknown }).error === "string") {
      const { error, message, ...details } = body as { error: string; message?: unknown };
      return new TidemarkApiError(response.status, error, typeof message === "string" ? message : error, details);
    }
    return new TidemarkApiError(response.status, `http_${response.status}`, `The server answered ${response.status}.`);
  }
}
