import type Database from "better-sqlite3";

/** Versioned schema changes, applied in order, each once, in its own transaction. */
export const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: "core",
    sql: `
      CREATE TABLE threads (
        tenant_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        status TEXT NOT NULL,
        state_version INTEGER NOT NULL,
        head_checkpoint_id TEXT NOT NULL,
        active_run_id TEXT,
        title TEXT,
        metadata TEXT NOT NULL,
        next_position INTEGER NOT NULL,
        stats TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, thread_id)
      ) WITHOUT ROWID;

      CREATE TABLE messages (
        tenant_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        run_id TEXT,
        state_version INTEGER NOT NULL,
        checkpoint_id TEXT NOT NULL,
        publication_status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, message_id)
      ) WITHOUT ROWID;
      CREATE UNIQUE INDEX messages_by_thread ON messages (tenant_id, thread_id, position);

      CREATE TABLE checkpoints (
        tenant_id TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        parent_checkpoint_id TEXT,
        state_version INTEGER NOT NULL,
        kind TEXT NOT NULL,
        run_id TEXT,
        message_id TEXT,
        completed_step_id TEXT,
        pending_step TEXT,
        resume_policy TEXT,
        cancelled_generation TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, checkpoint_id)
      ) WITHOUT ROWID;
      -- No two transitions of a thread share a version (invariant 5).
      CREATE UNIQUE INDEX checkpoints_by_version ON checkpoints (tenant_id, thread_id, state_version);

      CREATE TABLE runs (
        tenant_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        status TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        base_checkpoint_id TEXT NOT NULL,
        input TEXT NOT NULL,
        input_message_id TEXT NOT NULL,
        idempotency_key TEXT,
        request_hash TEXT NOT NULL,
        model TEXT NOT NULL,
        on_disconnect TEXT NOT NULL,
        recovery_policy TEXT NOT NULL,
        state_version INTEGER NOT NULL,
        cancel_requested_at INTEGER,
        cancel_reason TEXT,
        cancel_state_version INTEGER,
        cancel_checkpoint_id TEXT,
        published_message_id TEXT,
        active_operation TEXT,
        failure_reason TEXT,
        failure_message TEXT,
        stats TEXT NOT NULL,
        lease_owner TEXT,
        lease_expires_at INTEGER,
        transition_count INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        ended_at INTEGER,
        PRIMARY KEY (tenant_id, run_id)
      ) WITHOUT ROWID;
      CREATE UNIQUE INDEX runs_by_idempotency_key ON runs (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
      CREATE INDEX runs_by_thread ON runs (tenant_id, thread_id);
      CREATE INDEX runs_unfinished ON runs (status, lease_expires_at)
        WHERE status NOT IN ('completed', 'failed', 'cancelled');

      CREATE TABLE run_transitions (
        tenant_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        from_status TEXT,
        to_status TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, run_id, ordinal)
      ) WITHOUT ROWID;

      CREATE TABLE traces (
        trace_id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        run_id TEXT,
        thread_id TEXT,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        at INTEGER NOT NULL
      );
      CREATE INDEX traces_by_run ON traces (tenant_id, run_id, at);
    `,
  },
  {
    version: 2,
    name: "tool calls on messages",
    sql: `
      ALTER TABLE messages ADD COLUMN tool_calls TEXT;
      ALTER TABLE messages ADD COLUMN tool_call_id TEXT;
      ALTER TABLE messages ADD COLUMN tool_name TEXT;
    `,
  },
  {
    version: 3,
    name: "operation ledger",
    sql: `
      CREATE TABLE operations (
        tenant_id TEXT NOT NULL,
        op_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        phase TEXT NOT NULL,
        input TEXT NOT NULL,
        preview TEXT,
        result TEXT,
        error TEXT,
        commit_attempts INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, op_id)
      ) WITHOUT ROWID;
      -- One business action per key and tenant (invariant 2).
      CREATE UNIQUE INDEX operations_by_idempotency_key ON operations (tenant_id, idempotency_key);
      CREATE INDEX operations_by_thread ON operations (tenant_id, thread_id);
    `,
  },
  {
    version: 4,
    name: "fork",
    sql: `
      -- A branch reads its parent's rows up to the fork point instead of copying them (DESIGN §9).
      ALTER TABLE threads ADD COLUMN parent_thread_id TEXT;
      ALTER TABLE threads ADD COLUMN fork_checkpoint_id TEXT;
      ALTER TABLE threads ADD COLUMN fork_state_version INTEGER;
      -- The position of the thread's first own message: the length of its shared prefix.
      ALTER TABLE threads ADD COLUMN base_position INTEGER NOT NULL DEFAULT 0;
      -- The prefix's end at a fork checkpoint is found by version, without a scan.
      CREATE INDEX messages_by_version ON messages (tenant_id, thread_id, state_version);
      -- Whether a shared fragment was deleted, and in which thread and version.
      CREATE INDEX checkpoints_deleting ON checkpoints (tenant_id, message_id) WHERE kind = 'message_deleted';
    `,
  },
  {
    version: 5,
    name: "enqueued runs",
    sql: `
      -- A run enqueued on a busy thread waits, its input not yet accepted, until the active run ends.
      ALTER TABLE runs ADD COLUMN is_waiting INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX runs_waiting ON runs (tenant_id, thread_id, created_at) WHERE is_waiting = 1;
    `,
  },
  {
    version: 6,
    name: "thread list",
    sql: `
      -- A tenant's threads, most recently updated first, a page at a time: deleted threads are
      -- not in it, so a page reads only the rows it returns.
      CREATE INDEX threads_by_updated_at ON threads (tenant_id, updated_at, thread_id) WHERE status = 'active';
    `,
  },
  {
    version: 7,
    name: "thread indexes in read order",
    sql: `
      -- Without statistics SQLite read a thread's runs and operations through the primary key's
      -- tenant prefix (every row of the tenant) and sorted them. With the order the store reads
      -- them in, these indexes are the plan: a thread's rows, in order, nothing else.
      DROP INDEX runs_by_thread;
      CREATE INDEX runs_by_thread ON runs (tenant_id, thread_id, created_at, run_id);
      DROP INDEX operations_by_thread;
      CREATE INDEX operations_by_thread ON operations (tenant_id, thread_id, created_at, op_id);
    `,
  },
  {
    version: 8,
    name: "agents and plan steps",
    sql: `
      -- A run names the agent that executes it and passes it a config (DESIGN §11).
      ALTER TABLE runs ADD COLUMN agent TEXT NOT NULL DEFAULT 'chat';
      ALTER TABLE runs ADD COLUMN config TEXT;
      -- A labelled block, e.g. one subtask's finished section of a plan.
      ALTER TABLE messages ADD COLUMN label TEXT;
      -- A run's plan: one bookkeeping row per step; a step's work is durable through its checkpoint.
      CREATE TABLE run_steps (
        tenant_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        step_id TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        parent_step_id TEXT,
        title TEXT,
        depends_on TEXT NOT NULL,
        status TEXT NOT NULL,
        input_hash TEXT,
        started_at INTEGER,
        ended_at INTEGER,
        checkpoint_id TEXT,
        message_id TEXT,
        result TEXT,
        reused_from_run_id TEXT,
        error TEXT,
        PRIMARY KEY (tenant_id, run_id, step_id)
      ) WITHOUT ROWID;
      -- A run's steps in registration order, and its next ordinal, without a scan.
      CREATE INDEX run_steps_by_ordinal ON run_steps (tenant_id, run_id, ordinal, step_id);
    `,
  },  {
    version: 9,
    name: "live turns",
    sql: `
      -- A live turn cut by an interruption publishes what the user heard, marked (DESIGN §12).
      ALTER TABLE messages ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 10,
    name: "tenant run limits",
    sql: `
      -- A create counts its tenant's unfinished runs (its limits) without a scan of all its runs.
      CREATE INDEX IF NOT EXISTS runs_unfinished_by_tenant ON runs (tenant_id, is_waiting) WHERE status NOT IN ('completed', 'failed', 'cancelled');
    `,
  },
  {
    version: 11,
    name: "run instructions and metadata",
    sql: `
      -- A run's own system instruction, given to each of its model requests and never published;
      -- and the client's metadata about the run (the OpenAI layer's response metadata).
      ALTER TABLE runs ADD COLUMN instructions TEXT;
      ALTER TABLE runs ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
    `,
  },
  {
    version: 12,
    name: "partial indexes for the turn path",
    sql: `
      -- What a worker claims and what it must stop (PostgreSQL has had these since its first
      -- schema); a thread's rollbacks, and a lost run's committing actions, each without walking
      -- every checkpoint or operation of the tenant. The store names them (INDEXED BY): SQLite
      -- plans without statistics and would walk the primary key instead.
      CREATE INDEX IF NOT EXISTS runs_claimable ON runs (created_at) WHERE status = 'queued' AND is_waiting = 0;
      CREATE INDEX IF NOT EXISTS runs_by_lease_owner ON runs (lease_owner) WHERE status NOT IN ('completed', 'failed', 'cancelled');
      CREATE INDEX IF NOT EXISTS checkpoints_rolling_back ON checkpoints (tenant_id, thread_id) WHERE kind = 'run_rolled_back';
      CREATE INDEX IF NOT EXISTS operations_committing ON operations (tenant_id, run_id) WHERE phase = 'committing';
    `,
  },
  {
    version: 13,
    name: "structured messages",
    sql: `
      -- A structured step's object is published as JSON; a fragment of one is not usable for execution (issue 19).
      ALTER TABLE messages ADD COLUMN format TEXT NOT NULL DEFAULT 'text';
    `,
  },
  {
    version: 14,
    name: "retention per layer",
    sql: `
      -- An operation past its retention keeps a hashed key and its outcome only (docs/data/lifetimes.md).
      ALTER TABLE operations ADD COLUMN reduced_at INTEGER;
      ALTER TABLE operations ADD COLUMN result_kind TEXT;
      -- A finished run whose execution detail (steps, instructions, config) expired.
      ALTER TABLE runs ADD COLUMN detail_pruned_at INTEGER;
      -- What the pruner walks, oldest first, without a scan of every row of the table.
      CREATE INDEX IF NOT EXISTS traces_by_time ON traces (at);
      CREATE INDEX IF NOT EXISTS operations_reducible ON operations (updated_at) WHERE reduced_at IS NULL AND phase IN ('committed', 'failed', 'abandoned');
      CREATE INDEX IF NOT EXISTS runs_detail_expirable ON runs (ended_at) WHERE detail_pruned_at IS NULL AND ended_at IS NOT NULL;
      CREATE INDEX IF NOT EXISTS messages_fragments_by_time ON messages (created_at) WHERE role = 'assistant' AND publication_status IN ('fragment', 'deleted');
    `,
  },
];

/** Applies every migration newer than the database's version; returns the resulting version. */
export function migrate(db: Database.Database): number {
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
  const row = db.prepare("SELECT MAX(version) AS version FROM schema_migrations").get() as { version: number | null };
  let current = row.version ?? 0;
  for (const migration of MIGRATIONS) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        migration.version,
        migration.name,
        Date.now(),
      );
    })();
    current = migration.version;
  }
  return current;
}
