const MARKER = Symbol.for("tidemark.configuration-error");

/**
 * The operator's configuration cannot work (an option, a flag, an environment variable, the
 * database named): found at startup or by the CLI, with a message that says what to change.
 */
export class ConfigurationError extends Error {
  readonly [MARKER] = true;
  /** The option, flag or variable at fault, when there is one (e.g. `TIDEMARK_API_KEYS`, `--model`). */
  readonly setting: string | undefined;

  constructor(message: string, options: { setting?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "ConfigurationError";
    this.setting = options.setting;
  }

  /** Whether `value` is a ConfigurationError, or one of its kinds (also across module copies). */
  static isInstance(value: unknown): value is ConfigurationError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
