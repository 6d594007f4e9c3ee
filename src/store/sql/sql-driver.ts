/**
 * The one thing a backend implements for the SQL store (src/store/sql): run statements, run a
 * function in a transaction, close. Statements use `?` placeholders; a driver translates them if
 * its database wants another form. Everything else (the queries, the rules, the locking order) is
 * written once above this interface; see docs/decisions/007-one-sql-store-over-small-drivers.md.
 */
import type { Row } from "../rows.js";

/** Statements on one connection: the pool's outside a transaction, the transaction's inside one. */
export interface SqlConnection {
  /** The first row, if any. */
  get(text: string, values: readonly unknown[]): Promise<Row | undefined>;
  all(text: string, values: readonly unknown[]): Promise<Row[]>;
  /** How many rows the statement changed. */
  run(text: string, values: readonly unknown[]): Promise<{ changes: number }>;
}

/** How a transaction isolates itself. */
export interface TransactionOptions {
  /** A consistent snapshot for reads only: it locks nothing and is never run again. */
  readOnly?: boolean;
  /**
   * Unique constraints whose violation means a concurrent writer of the same row committed
   * first: the transaction runs again and finds that row (where writers really run concurrently).
   */
  rerunOnConflictWith?: readonly string[];
}

/** The few fragments of SQL in which the backends differ. */
export interface SqlDialect {
  readonly name: "sqlite" | "postgres";
  /**
   * Appended to a SELECT inside a write transaction: lock the rows read until the transaction
   * ends (` FOR UPDATE`), or nothing where a write transaction already excludes every other writer.
   */
  readonly forUpdate: string;
  /** Appended to a claiming SELECT: lock the rows read and skip those another transaction holds. */
  readonly forUpdateSkipLocked: string;
  /** A column that orders an append-only table's rows as they were inserted (`rowid`, or a serial). */
  readonly insertionOrder: string;
  /**
   * Placed after a table's name: read it through this (partial) index. SQLite plans without
   * statistics and would otherwise walk every run of a tenant or a thread through the primary key;
   * PostgreSQL chooses by its statistics, and this is nothing there.
   */
  throughIndex(index: string): string;
  /** The table of the shared event log (PostgreSQL's `run_events`), or null where events live in memory only. */
  readonly eventLogTable: string | null;
}

/** A backend: its connection (or pool), its transactions, its dialect. */
export interface SqlDriver {
  readonly dialect: SqlDialect;
  /** Statements outside any transaction. */
  readonly connection: SqlConnection;
  /** Runs `fn` in one transaction on one connection; commits if it resolves, rolls back if it throws. */
  transaction<T>(fn: (connection: SqlConnection) => Promise<T>, options?: TransactionOptions): Promise<T>;
  close(): Promise<void>;
}
