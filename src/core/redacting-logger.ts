import { silentLogger, type Logger } from "./logger.js";
import { noRedaction, redactValue, type Redactor } from "./redactor.js";

/** A logger whose every line (its message and each field) passes through a redactor before `inner` sees it. */
class RedactingLogger implements Logger {
  readonly inner: Logger;
  readonly redactor: Redactor;

  constructor(inner: Logger, redactor: Redactor) {
    this.inner = inner;
    this.redactor = redactor;
  }

  info(data: Record<string, unknown>, message: string): void {
    this.inner.info(redactValue(this.redactor, data), this.redactor(message));
  }

  warn(data: Record<string, unknown>, message: string): void {
    this.inner.warn(redactValue(this.redactor, data), this.redactor(message));
  }

  error(data: Record<string, unknown>, message: string): void {
    this.inner.error(redactValue(this.redactor, data), this.redactor(message));
  }
}

/**
 * `logger` with every line redacted by `redactor`: the one place log lines are redacted.
 * Wrapping a logger this already returned for the same redactor returns it unchanged, so
 * `startTidemark` and the runtime it creates never redact a line twice.
 */
export function redactLogger(logger: Logger, redactor: Redactor): Logger {
  if (redactor === noRedaction || logger === silentLogger) return logger;
  if (logger instanceof RedactingLogger && logger.redactor === redactor) return logger;
  return new RedactingLogger(logger, redactor);
}
