/** Another process holds the database file. */
export class DatabaseLockedError extends Error {
  readonly code = "database_locked";
  readonly databasePath: string;
  readonly lockPath: string;

  constructor(databasePath: string, lockPath: string, options?: ErrorOptions) {
    super(
      `Another Tidemark process is serving ${databasePath} (it holds ${lockPath}). ` +
        "Stop it first, or give this one another --db.",
      options,
    );
    this.name = "DatabaseLockedError";
    this.databasePath = databasePath;
    this.lockPath = lockPath;
  }

  static isInstance(error: unknown): error is DatabaseLockedError {
    return error instanceof Error && (error as { code?: unknown }).code === "database_locked";
  }
}
