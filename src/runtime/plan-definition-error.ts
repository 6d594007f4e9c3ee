const MARKER = Symbol.for("tidemark.plan-definition-error");

/**
 * A plan's steps are not a valid graph, or a step used the plan wrongly: a duplicate or unknown
 * id, a step that waits on itself or its own parent, a step added after its parent settled, a
 * result asked of a step that has none. A mistake of the plan's author, caught before it runs.
 */
export class PlanDefinitionError extends Error {
  readonly [MARKER] = true;
  /** The step at fault. */
  readonly stepId: string;

  constructor(stepId: string, message: string) {
    super(message);
    this.name = "PlanDefinitionError";
    this.stepId = stepId;
  }

  /** Whether `value` is a PlanDefinitionError (also across module copies). */
  static isInstance(value: unknown): value is PlanDefinitionError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
