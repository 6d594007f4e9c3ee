import { ConfigurationError } from "../core/errors/configuration-error.js";

const MARKER = Symbol.for("tidemark.store-schema-error");

/** What is wrong with the database a store was pointed at. */
export type StoreSchemaProblem =
  /** No file at the path, or no such schema (or none on the search_path). */
  | "missing"
  /** The file is not a SQLite database. */
  | "not_a_database"
  /** It holds no Tidemark tables. */
  | "not_tidemark"
  /** A newer Tidemark wrote it. */
  | "newer_version"
  /** An older Tidemark wrote it and it was never migrated (a read-only store never migrates). */
  | "older_version"
  /** Some of Tidemark's tables are missing. */
  | "incomplete";

/**
 * The database a store was pointed at is not a current Tidemark database: the operator named the
 * wrong file or schema, or must migrate it first. The message names it and says what it is instead.
 */
export class StoreSchemaError extends ConfigurationError {
  readonly [MARKER] = true;
  readonly problem: StoreSchemaProblem;
  /** The file path or schema name. */
  readonly location: string;

  constructor(problem: StoreSchemaProblem, location: string, message: string, options: { setting?: string; cause?: unknown } = {}) {
    super(message, options);
    this.name = "StoreSchemaError";
    this.problem = problem;
    this.location = location;
  }

  /** Whether `value` is a StoreSchemaError (also across module copies). */
  static override isInstance(value: unknown): value is StoreSchemaError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
