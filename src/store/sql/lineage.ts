/**
 * Reads through a branch's fork point (DESIGN §9). A branch stores only
 * its own rows; what it shares with its parent is read from the parent's rows, bounded by the fork
 * point: the parent's messages below the branch's first position and its checkpoints up to the
 * fork version, and so on up the chain for a fork of a fork. Each level is one range on an index,
 * so a read costs what it returns, never the length of the prefix it skips.
 */
import type { CheckpointRecord, MessageRecord, OperationRecord } from "../../core/index.js";
import { toCheckpoint, toMessage, toOperation } from "../rows.js";
import { StoreInvariantError } from "../store-invariant-error.js";
import type { SqlContext, SqlStatement } from "./sql-context.js";

/** The rows of one thread of a lineage that a viewer sees. */
export interface LineageLevel {
  threadId: string;
  /** The highest state version seen: the child's fork version (unbounded for the viewer's own thread). */
  maxVersion: number;
  /** Positions below this are seen: the child's base position (unbounded for the viewer's own thread). */
  positionBelow: number;
}

/** Unbounded, as an integer a BIGINT compares exactly. */
export const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** A fork chain longer than this is a corrupted store (a cycle), not a real lineage. */
const MAX_DEPTH = 10_000;

type Sql = (text: string) => SqlStatement;

/** What reading an inherited message needs: statements, and the dialect that names a partial index. */
type SqlWithDialect = Pick<SqlContext, "sql" | "dialect">;

/** The thread's lineage, root first and the thread itself last; undefined when the thread is unknown. */
export async function readLineage(sql: Sql, tenantId: string, threadId: string): Promise<LineageLevel[] | undefined> {
  const statement = sql("SELECT parent_thread_id, fork_state_version, base_position FROM threads WHERE tenant_id = ? AND thread_id = ?");
  let row = await statement.get(tenantId, threadId);
  if (!row) return undefined;
  const levels: LineageLevel[] = [{ threadId, maxVersion: UNBOUNDED, positionBelow: UNBOUNDED }];
  while (row.parent_thread_id !== null) {
    if (levels.length > MAX_DEPTH) throw new StoreInvariantError("broken_lineage", threadId, `fork chain of ${threadId} is longer than ${MAX_DEPTH}: a cycle?`);
    const parentId = row.parent_thread_id as string;
    levels.unshift({ threadId: parentId, maxVersion: Number(row.fork_state_version ?? 0), positionBelow: Number(row.base_position) });
    const parent = await statement.get(tenantId, parentId);
    if (!parent) throw new StoreInvariantError("broken_lineage", threadId, `thread ${threadId} names a missing ancestor ${parentId}`);
    row = parent;
  }
  return levels;
}

/** The lineage's messages in order; with `limit`, only the last `limit`, read newest level first. */
export async function readLineageMessages(
  context: SqlWithDialect,
  tenantId: string,
  levels: readonly LineageLevel[],
  limit?: number,
): Promise<MessageRecord[]> {
  const { sql } = context;
  const viewed: MessageRecord[][] = [];
  if (limit === undefined) {
    const statement = sql("SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? AND position < ? ORDER BY position");
    for (const level of levels) viewed.push((await statement.all(tenantId, level.threadId, level.positionBelow)).map(toMessage));
  } else {
    const statement = sql(
      "SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? AND position < ? ORDER BY position DESC LIMIT ?",
    );
    let remaining = limit;
    for (let index = levels.length - 1; index >= 0 && remaining > 0; index--) {
      const level = levels[index]!;
      const rows = (await statement.all(tenantId, level.threadId, level.positionBelow, remaining)).map(toMessage).reverse();
      viewed.unshift(rows);
      remaining -= rows.length;
    }
  }
  const own = levels.at(-1)!.threadId;
  const messages: MessageRecord[] = [];
  for (const message of viewed.flat()) {
    messages.push(message.threadId === own ? message : await asSeenFrom(context, tenantId, levels, message));
  }
  return messages;
}

/**
 * An inherited message as the viewer sees it. Only a fragment's status (deleted) and a run's
 * input's (rolled back) can change after it was written, and the row holds its owner's view: a
 * delete in the owner after the fork, or in a branch, is a `message_deleted` checkpoint, and a
 * rollback a `run_rolled_back` one of the owner, each counting only within the viewer's lineage.
 */
async function asSeenFrom(context: SqlWithDialect, tenantId: string, levels: readonly LineageLevel[], message: MessageRecord): Promise<MessageRecord> {
  if (message.publicationStatus === "published") return message;
  const { sql, dialect } = context;
  // A fragment is the assistant's; a user message that is not published was rolled back.
  const wasPublished = message.role === "user";
  const deletes = wasPublished
    ? await sql(
        `SELECT thread_id, state_version FROM checkpoints${dialect.throughIndex("checkpoints_rolling_back")}
         WHERE tenant_id = ? AND thread_id = ? AND message_id = ? AND kind = 'run_rolled_back'`,
      ).all(tenantId, message.threadId, message.messageId)
    : await sql(
        `SELECT thread_id, state_version FROM checkpoints${dialect.throughIndex("checkpoints_deleting")}
         WHERE tenant_id = ? AND message_id = ? AND kind = 'message_deleted'`,
      ).all(tenantId, message.messageId);
  const isDeleted = deletes.some((deleted) =>
    levels.some((level) => level.threadId === deleted.thread_id && Number(deleted.state_version) <= level.maxVersion),
  );
  return { ...message, publicationStatus: isDeleted ? "deleted" : wasPublished ? "published" : "fragment" };
}

/** `message` as the lineage's viewer sees it, or undefined when it is not in the lineage (or beyond a fork point). */
export async function messageInLineage(
  context: SqlWithDialect,
  tenantId: string,
  levels: readonly LineageLevel[],
  message: MessageRecord,
): Promise<MessageRecord | undefined> {
  const level = levels.find((candidate) => candidate.threadId === message.threadId && message.position < candidate.positionBelow);
  if (!level) return undefined;
  return level === levels.at(-1) ? message : asSeenFrom(context, tenantId, levels, message);
}

/** The lineage's checkpoints, oldest first, from `fromVersion` on. */
export async function readLineageCheckpoints(
  sql: Sql,
  tenantId: string,
  levels: readonly LineageLevel[],
  fromVersion = 0,
): Promise<CheckpointRecord[]> {
  const statement = sql(
    `SELECT * FROM checkpoints WHERE tenant_id = ? AND thread_id = ? AND state_version BETWEEN ? AND ?
     ORDER BY state_version`,
  );
  const viewed: CheckpointRecord[][] = [];
  for (const level of levels) viewed.push((await statement.all(tenantId, level.threadId, fromVersion, level.maxVersion)).map(toCheckpoint));
  return viewed.flat();
}

/** The lineage level whose visible checkpoints include `checkpoint`, if any. */
export function levelHolding(levels: readonly LineageLevel[], checkpoint: CheckpointRecord): LineageLevel | undefined {
  return levels.find((level) => level.threadId === checkpoint.threadId && checkpoint.stateVersion <= level.maxVersion);
}

/** The checkpoint `checkpointId`, if the lineage sees it (an unknown, foreign or unrelated one is not). */
export async function checkpointInLineage(
  sql: Sql,
  tenantId: string,
  levels: readonly LineageLevel[],
  checkpointId: string,
): Promise<CheckpointRecord | undefined> {
  const row = await sql("SELECT * FROM checkpoints WHERE tenant_id = ? AND checkpoint_id = ?").get(tenantId, checkpointId);
  const checkpoint = row ? toCheckpoint(row) : undefined;
  return checkpoint && levelHolding(levels, checkpoint) ? checkpoint : undefined;
}

/** The lineage's checkpoint at `stateVersion` (versions are one chain, each level holding a range), if any. */
export async function checkpointAtVersion(
  sql: Sql,
  tenantId: string,
  levels: readonly LineageLevel[],
  stateVersion: number,
): Promise<CheckpointRecord | undefined> {
  const level = levels.find((candidate) => stateVersion <= candidate.maxVersion);
  if (!level) return undefined;
  const row = await sql("SELECT * FROM checkpoints WHERE tenant_id = ? AND thread_id = ? AND state_version = ?").get(tenantId, level.threadId, stateVersion);
  return row ? toCheckpoint(row) : undefined;
}

/**
 * The operations a viewer sees: its own, and its ancestors' whose run's input is in the shared
 * prefix (the model context of a branch needs the outcome of a tool call it inherited).
 */
export async function readLineageOperations(sql: Sql, tenantId: string, levels: readonly LineageLevel[]): Promise<OperationRecord[]> {
  // A run belongs to the shared prefix if it was accepted at or before the fork version: its base
  // checkpoint (the head it built on) is older than that. Every run has one, with input or not.
  const inherited = sql(
    `SELECT o.* FROM operations o
       JOIN runs r ON r.tenant_id = o.tenant_id AND r.run_id = o.run_id
       JOIN checkpoints c ON c.tenant_id = r.tenant_id AND c.checkpoint_id = r.base_checkpoint_id
     WHERE o.tenant_id = ? AND o.thread_id = ? AND c.state_version < ?
     ORDER BY o.created_at, o.op_id`,
  );
  const own = sql("SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at, op_id");
  const viewed: OperationRecord[][] = [];
  for (const [index, level] of levels.entries()) {
    const rows =
      index === levels.length - 1 ? await own.all(tenantId, level.threadId) : await inherited.all(tenantId, level.threadId, level.maxVersion);
    viewed.push(rows.map(toOperation));
  }
  return viewed.flat();
}

/**
 * How many messages a lineage holds at `stateVersion` of `threadId` (whose own messages start at
 * `basePosition`): the base position of a branch forked there. One indexed row, whatever the length.
 */
export async function prefixLength(
  sql: Sql,
  tenantId: string,
  threadId: string,
  basePosition: number,
  stateVersion: number,
): Promise<number> {
  const last = await sql(
    `SELECT position FROM messages WHERE tenant_id = ? AND thread_id = ? AND state_version <= ?
     ORDER BY state_version DESC LIMIT 1`,
  ).get(tenantId, threadId, stateVersion);
  return last === undefined ? basePosition : Number(last.position) + 1;
}
