const MARKER = Symbol.for("tidemark.agent-definition-error");

/**
 * An agent is not deployable: a bad name, no `steps`, a config schema that is not a schema, two
 * agents with one name, or a config file that exports no agents. Caught when the server starts.
 */
export class AgentDefinitionError extends Error {
  readonly [MARKER] = true;
  /** The agent at fault (its name as given). */
  readonly agent: string;

  constructor(agent: string, message: string) {
    super(`agent "${agent}": ${message}`);
    this.name = "AgentDefinitionError";
    this.agent = agent;
  }

  /** Whether `value` is an AgentDefinitionError (also across module copies). */
  static isInstance(value: unknown): value is AgentDefinitionError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
