/** How the CLI refuses: one line on stderr and exit code 2, never a stack trace. */

/** Writes `tidemark: <message>` to stderr and exits with code 2 (bad configuration, or nothing to work on). */
export function fail(message: string): never {
  process.stderr.write(`tidemark: ${message}\n`);
  process.exit(2);
}

/** An error's message (an internal error's stack stays out of the terminal). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A database address fit to print: its password replaced. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "the database address";
  }
}
