/**
 * The PostgreSQL schema: the SQLite adapter's tables with the same column names (so both share
 * `rows.ts`), BIGINT times, `COLLATE "C"` text so ids order as bytes (as in SQLite), and the
 * table the scaled deployment fans events out through.
 */
export const PG_MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: "threads, runs, checkpoints, messages, operations, traces, run events",
    sql: `
      CREATE TABLE threads (
        tenant_id TEXT COLLATE "C" NOT NULL,
        thread_id TEXT COLLATE "C" NOT NULL,
        status TEXT NOT NULL,
        state_version BIGINT NOT NULL,
        head_checkpoint_id TEXT COLLATE "C" NOT NULL,
        active_run_id TEXT COLLATE "C",
        title TEXT,
        metadata TEXT NOT NULL,
        next_position BIGINT NOT NULL,
        stats TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        parent_thread_id TEXT COLLATE "C",
        fork_checkpoint_id TEXT COLLATE "C",
        fork_state_version BIGINT,
        base_position BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, thread_id)
      );
      CREATE TABLE messages (
        tenant_id TEXT COLLATE "C" NOT NULL,
        message_id TEXT COLLATE "C" NOT NULL,
        thread_id TEXT COLLATE "C" NOT NULL,
        position BIGINT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        run_id TEXT COLLATE "C",
        state_version BIGINT NOT NULL,
        checkpoint_id TEXT COLLATE "C" NOT NULL,
        publication_status TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        tool_calls TEXT,
        tool_call_id TEXT,
        tool_name TEXT,
        PRIMARY KEY (tenant_id, message_id)
      );
      CREATE UNIQUE INDEX messages_by_thread ON messages (tenant_id, thread_id, position);
      CREATE INDEX messages_by_version ON messages (tenant_id, thread_id, state_version);
      CREATE TABLE checkpoints (
        tenant_id TEXT COLLATE "C" NOT NULL,
        checkpoint_id TEXT COLLATE "C" NOT NULL,
        thread_id TEXT COLLATE "C" NOT NULL,
        parent_checkpoint_id TEXT COLLATE "C",
        state_version BIGINT NOT NULL,
        kind TEXT NOT NULL,
        run_id TEXT COLLATE "C",
        message_id TEXT COLLATE "C",
        completed_step_id TEXT,
        pending_step TEXT,
        resume_policy TEXT,
        cancelled_generation TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, checkpoint_id)
      );
      -- No two transitions of a thread share a version (invariant 5).
      CREATE UNIQUE INDEX checkpoints_by_version ON checkpoints (tenant_id, thread_id, state_version);
      CREATE INDEX checkpoints_deleting ON checkpoints (tenant_id, message_id) WHERE kind = 'message_deleted';
      CREATE TABLE runs (
        tenant_id TEXT COLLATE "C" NOT NULL,
        run_id TEXT COLLATE "C" NOT NULL,
        thread_id TEXT COLLATE "C" NOT NULL,
        status TEXT NOT NULL,
        attempt BIGINT NOT NULL,
        base_checkpoint_id TEXT COLLATE "C" NOT NULL,
        input TEXT NOT NULL,
        input_message_id TEXT COLLATE "C" NOT NULL,
        idempotency_key TEXT COLLATE "C",
        request_hash TEXT NOT NULL,
        model TEXT NOT NULL,
        on_disconnect TEXT NOT NULL,
        recovery_policy TEXT NOT NULL,
        state_version BIGINT NOT NULL,
        cancel_requested_at BIGINT,
        cancel_reason TEXT,
        cancel_state_version BIGINT,
        cancel_checkpoint_id TEXT COLLATE "C",
        published_message_id TEXT COLLATE "C",
        active_operation TEXT,
        failure_reason TEXT,
        failure_message TEXT,
        stats TEXT NOT NULL,
        lease_owner TEXT COLLATE "C",
        lease_expires_at BIGINT,
        transition_count BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        started_at BIGINT,
        ended_at BIGINT,
        is_waiting INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, run_id)
      );
      CREATE UNIQUE INDEX runs_by_idempotency_key ON runs (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
      CREATE INDEX runs_by_thread ON runs (tenant_id, thread_id);
      CREATE INDEX runs_unfinished ON runs (status, lease_expires_at) WHERE status NOT IN ('completed', 'failed', 'cancelled');
      CREATE INDEX runs_by_lease_owner ON runs (lease_owner) WHERE status NOT IN ('completed', 'failed', 'cancelled');
      CREATE INDEX runs_claimable ON runs (created_at) WHERE status = 'queued' AND is_waiting = 0;
      CREATE INDEX runs_waiting ON runs (tenant_id, thread_id, created_at) WHERE is_waiting = 1;
      CREATE TABLE run_transitions (
        tenant_id TEXT COLLATE "C" NOT NULL,
        run_id TEXT COLLATE "C" NOT NULL,
        ordinal BIGINT NOT NULL,
        from_status TEXT,
        to_status TEXT NOT NULL,
        at BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, run_id, ordinal)
      );
      CREATE TABLE traces (
        trace_id TEXT COLLATE "C" PRIMARY KEY,
        tenant_id TEXT COLLATE "C" NOT NULL,
        run_id TEXT COLLATE "C",
        thread_id TEXT COLLATE "C",
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        at BIGINT NOT NULL,
        -- Insertion order, for traces that share a time (SQLite's rowid).
        seq BIGSERIAL NOT NULL
      );
      CREATE INDEX traces_by_run ON traces (tenant_id, run_id, at);
      CREATE TABLE operations (
        tenant_id TEXT COLLATE "C" NOT NULL,
        op_id TEXT COLLATE "C" NOT NULL,
        thread_id TEXT COLLATE "C" NOT NULL,
        run_id TEXT COLLATE "C" NOT NULL,
        tool_name TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        idempotency_key TEXT COLLATE "C" NOT NULL,
        phase TEXT NOT NULL,
        input TEXT NOT NULL,
        preview TEXT,
        result TEXT,
        error TEXT,
        commit_attempts BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, op_id)
      );
      -- One idempotency key, one external action (invariant 2).
      CREATE UNIQUE INDEX operations_by_idempotency_key ON operations (tenant_id, idempotency_key);
      CREATE INDEX operations_by_thread ON operations (tenant_id, thread_id);
      -- The scaled deployment's event log: the executing worker appends, every API process reads.
      CREATE TABLE run_events (
        tenant_id TEXT COLLATE "C" NOT NULL,
        run_id TEXT COLLATE "C" NOT NULL,
        seq BIGINT NOT NULL,
        event TEXT NOT NULL,
        at BIGINT NOT NULL,
        PRIMARY KEY (tenant_id, run_id, seq)
      );
      CREATE INDEX run_events_by_time ON run_events (at);
    `,
  },
  {
    version: 2,
    name: "thread list",
    sql: `
      -- A tenant's threads, most recently updated first, a page at a time: deleted threads are
      -- not in it, so a page reads only the rows it returns.
      CREATE INDEX threads_by_updated_at ON threads (tenant_id, updated_at, thread_id) WHERE status = 'active';
    `,
  },
  {
    version: 3,
    name: "agents and plan steps",
    sql: `
      -- A run names the agent that executes it and passes it a config (DESIGN §11).
      ALTER TABLE runs ADD COLUMN agent TEXT NOT NULL DEFAULT 'chat';
      ALTER TABLE runs ADD COLUMN config TEXT;
      -- A labelled block, e.g. one subtask's finished section of a plan.
      ALTER TABLE messages ADD COLUMN label TEXT;
      -- A run's plan: one bookkeeping row per step; a step's work is durable through its checkpoint.
      CREATE TABLE run_steps (
        tenant_id TEXT COLLATE "C" NOT NULL,
        run_id TEXT COLLATE "C" NOT NULL,
        thread_id TEXT COLLATE "C" NOT NULL,
        step_id TEXT COLLATE "C" NOT NULL,
        ordinal BIGINT NOT NULL,
        parent_step_id TEXT COLLATE "C",
        title TEXT,
        depends_on TEXT NOT NULL,
        status TEXT NOT NULL,
        input_hash TEXT,
        started_at BIGINT,
        ended_at BIGINT,
        checkpoint_id TEXT COLLATE "C",
        message_id TEXT COLLATE "C",
        result TEXT,
        reused_from_run_id TEXT COLLATE "C",
        error TEXT,
        PRIMARY KEY (tenant_id, run_id, step_id)
      );
      -- A run's steps in registration order, and its next ordinal, without a scan.
      CREATE INDEX run_steps_by_ordinal ON run_steps (tenant_id, run_id, ordinal, step_id);
    `,
  },  {
    version: 4,
    name: "live turns",
    sql: `
      -- A live turn cut by an interruption publishes what the user heard, marked (DESIGN §12).
      ALTER TABLE messages ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 5,
    name: "tenant run limits",
    sql: `
      -- A create counts its tenant's unfinished runs (its limits) without a scan of all its runs.
      CREATE INDEX IF NOT EXISTS runs_unfinished_by_tenant ON runs (tenant_id, is_waiting) WHERE status NOT IN ('completed', 'failed', 'cancelled');
    `,
  },
  {
    version: 6,
    name: "run instructions and metadata",
    sql: `
      -- A run's own system instruction, given to each of its model requests and never published;
      -- and the client's metadata about the run (the OpenAI layer's response metadata).
      ALTER TABLE runs ADD COLUMN instructions TEXT;
      ALTER TABLE runs ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
    `,
  },
  {
    version: 7,
    name: "partial indexes for the turn path",
    sql: `
      -- A thread's rollbacks, and a lost run's committing actions, each without walking every
      -- checkpoint or operation of the tenant.
      CREATE INDEX IF NOT EXISTS checkpoints_rolling_back ON checkpoints (tenant_id, thread_id) WHERE kind = 'run_rolled_back';
      CREATE INDEX IF NOT EXISTS operations_committing ON operations (tenant_id, run_id) WHERE phase = 'committing';
    `,
  },
  {
    version: 8,
    name: "structured messages",
    sql: `
      -- A structured step's object is published as JSON; a fragment of one is not usable for execution (issue 19).
      ALTER TABLE messages ADD COLUMN IF NOT EXISTS format TEXT NOT NULL DEFAULT 'text';
    `,
  },
  {
    version: 9,
    name: "retention per layer",
    sql: `
      -- An operation past its retention keeps a hashed key and its outcome only (docs/data/lifetimes.md).
      ALTER TABLE operations ADD COLUMN IF NOT EXISTS reduced_at BIGINT;
      ALTER TABLE operations ADD COLUMN IF NOT EXISTS result_kind TEXT;
      -- A finished run whose execution detail (steps, instructions, config) expired.
      ALTER TABLE runs ADD COLUMN IF NOT EXISTS detail_pruned_at BIGINT;
      -- What the pruner walks, oldest first, without a scan of every row of the table.
      CREATE INDEX IF NOT EXISTS traces_by_time ON traces (at);
      CREATE INDEX IF NOT EXISTS operations_reducible ON operations (updated_at) WHERE reduced_at IS NULL AND phase IN ('committed', 'failed', 'abandoned');
      CREATE INDEX IF NOT EXISTS runs_detail_expirable ON runs (ended_at) WHERE detail_pruned_at IS NULL AND ended_at IS NOT NULL;
      CREATE INDEX IF NOT EXISTS messages_fragments_by_time ON messages (created_at) WHERE role = 'assistant' AND publication_status IN ('fragment', 'deleted');
    `,
  },
];
