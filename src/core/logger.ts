/** The logging the runtime and server need; pino or console fit it. */
export interface Logger {
  info(data: Record<string, unknown>, message: string): void;
  warn(data: Record<string, unknown>, message: string): void;
  error(data: Record<string, unknown>, message: string): void;
}

/** A logger that writes one JSON line per entry to stderr. */
export function createJsonLogger(): Logger {
  const write = (level: string) => (data: Record<string, unknown>, message: string) => {
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...data })}\n`);
  };
  return { info: write("info"), warn: write("warn"), error: write("error") };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };
