/** The logging the runtime and server need; pino or console fit it. */
export interface Logger {
  info(data: Record<string, unknown>, message: string): void;
  warn(data: Record<string, unknown>, message: string): void;
  error(data: Record<string, unknown>, message: string): void;
}

/** The fields every log line about a run carries, so an operator can follow one run, thread or tenant. */
export function runLogFields(run: { runId: string; threadId: string; tenantId: string }): { run_id: string; thread_id: string; tenant_id: string } {
  return { run_id: run.runId, thread_id: run.threadId, tenant_id: run.tenantId };
}

/** A logger that writes one JSON line per entry to stderr. */
export function createJsonLogger(): Logger {
  const write = (level: string) => (data: Record<string, unknown>, message: string) => {
    const fixed = { time: new Date().toISOString(), level, message };
    // The line's own fields first, and never overwritten by a field of the entry.
    process.stderr.write(`${JSON.stringify({ ...fixed, ...data, ...fixed })}\n`);
  };
  return { info: write("info"), warn: write("warn"), error: write("error") };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };
