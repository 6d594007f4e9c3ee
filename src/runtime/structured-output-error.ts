const MARKER = Symbol.for("tidemark.structured-output-error");

/** Why a structured step's object was refused. */
export type StructuredOutputProblem = "not_json" | "schema_mismatch";

/** One place where the object does not match its schema. */
export interface StructuredOutputIssue {
  path: string;
  message: string;
}

/**
 * A structured step's generation ended, but its text is not one complete object that validates
 * against the step's schema (cut short, not JSON, or the wrong shape). The step fails with code
 * `invalid_structured_output`; nothing of it is published. The message names the problem and the
 * paths, never the model's text.
 */
export class StructuredOutputError extends Error {
  readonly [MARKER] = true;
  readonly code = "invalid_structured_output";

  constructor(
    readonly problem: StructuredOutputProblem,
    readonly issues: readonly StructuredOutputIssue[],
    options: { cause?: unknown } = {},
  ) {
    super(describe(problem, issues), { cause: options.cause });
    this.name = "StructuredOutputError";
  }

  /** Whether `value` is a StructuredOutputError (also across module copies). */
  static isInstance(value: unknown): value is StructuredOutputError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}

function describe(problem: StructuredOutputProblem, issues: readonly StructuredOutputIssue[]): string {
  if (problem === "not_json") return "invalid_structured_output: the model's answer is not one complete JSON object, so nothing was published.";
  const where = issues
    .slice(0, 5)
    .map((issue) => `${issue.path || "(root)"}: ${issue.message}`)
    .join("; ");
  return `invalid_structured_output: the model's object does not match the step's schema (${where}), so nothing was published.`.slice(0, 300);
}
