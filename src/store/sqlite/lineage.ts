/**
 * Reads through a branch's fork point (DESIGN §9). A branch stores only its own rows; what it
 * shares with its parent is read from the parent's rows, bounded by the fork point: the parent's
 * messages below the branch's first position and its checkpoints up to the fork version, and so
 * on up the chain for a fork of a fork. Each level is one range on an index, so a read costs
 * what it returns, never the length of the prefix it skips.
 */
import type Database from "better-sqlite3";
import type { CheckpointRecord, MessageRecord, OperationRecord } from "../../core/index.js";
import { toCheckpoint, toMessage, toOperation, type Row } from "../rows.js";

/** The rows of one thread of a lineage that a viewer sees. */
export interface LineageLevel {
  threadId: string;
  /** The highest state version seen: the child's fork version (unbounded for the viewer's own thread). */
  maxVersion: number;
  /** Positions below this are seen: the child's base position (unbounded for the viewer's own thread). */
  positionBelow: number;
}

/** Unbounded, as an integer SQLite compares exactly. */
export const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** A fork chain longer than this is a corrupted store (a cycle), not a real lineage. */
const MAX_DEPTH = 10_000;

type Sql = (text: string) => Database.Statement;

interface ForkColumns {
  parent_thread_id: string | null;
  fork_state_version: number | null;
  base_position: number;
}

/** The thread's lineage, root first and the thread itself last; undefined when the thread is unknown. */
export function readLineage(sql: Sql, tenantId: string, threadId: string): LineageLevel[] | undefined {
  const statement = sql("SELECT parent_thread_id, fork_state_version, base_position FROM threads WHERE tenant_id = ? AND thread_id = ?");
  let row = statement.get(tenantId, threadId) as ForkColumns | undefined;
  if (!row) return undefined;
  const levels: LineageLevel[] = [{ threadId, maxVersion: UNBOUNDED, positionBelow: UNBOUNDED }];
  while (row.parent_thread_id !== null) {
    if (levels.length > MAX_DEPTH) throw new Error(`fork chain of ${threadId} is longer than ${MAX_DEPTH}: a cycle?`);
    levels.unshift({ threadId: row.parent_thread_id, maxVersion: row.fork_state_version ?? 0, positionBelow: row.base_position });
    const parent = statement.get(tenantId, row.parent_thread_id) as ForkColumns | undefined;
    if (!parent) throw new Error(`thread ${threadId} names a missing ancestor ${row.parent_thread_id}`);
    row = parent;
  }
  return levels;
}

/** The lineage's messages in order; with `limit`, only the last `limit`, read newest level first. */
export function readLineageMessages(
  sql: Sql,
  tenantId: string,
  levels: readonly LineageLevel[],
  limit?: number,
): MessageRecord[] {
  const viewed: MessageRecord[][] = [];
  if (limit === undefined) {
    const statement = sql("SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? AND position < ? ORDER BY position");
    for (const level of levels) viewed.push((statement.all(tenantId, level.threadId, level.positionBelow) as Row[]).map(toMessage));
  } else {
    const statement = sql(
      "SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? AND position < ? ORDER BY position DESC LIMIT ?",
    );
    let remaining = limit;
    for (let index = levels.length - 1; index >= 0 && remaining > 0; index--) {
      const level = levels[index]!;
      const rows = (statement.all(tenantId, level.threadId, level.positionBelow, remaining) as Row[]).map(toMessage).reverse();
      viewed.unshift(rows);
      remaining -= rows.length;
    }
  }
  const own = levels.at(-1)!.threadId;
  return viewed.flat().map((message) => (message.threadId === own ? message : asSeenFrom(sql, tenantId, levels, message)));
}

/**
 * An inherited message as the viewer sees it. Only a fragment's status can change after it was
 * written, and the row holds its owner's view: a delete in the owner after the fork, or in a
 * branch, is a `message_deleted` checkpoint that counts only within the viewer's lineage.
 */
function asSeenFrom(sql: Sql, tenantId: string, levels: readonly LineageLevel[], message: MessageRecord): MessageRecord {
  if (message.publicationStatus === "published") return message;
  const deletes = sql(
    "SELECT thread_id, state_version FROM checkpoints WHERE tenant_id = ? AND message_id = ? AND kind = 'message_deleted'",
  ).all(tenantId, message.messageId) as { thread_id: string; state_version: number }[];
  const isDeleted = deletes.some((deleted) =>
    levels.some((level) => level.threadId === deleted.thread_id && deleted.state_version <= level.maxVersion),
  );
  return { ...message, publicationStatus: isDeleted ? "deleted" : "fragment" };
}

/** `message` as the lineage's viewer sees it, or undefined when it is not in the lineage (or beyond a fork point). */
export function messageInLineage(
  sql: Sql,
  tenantId: string,
  levels: readonly LineageLevel[],
  message: MessageRecord,
): MessageRecord | undefined {
  const level = levels.find((candidate) => candidate.threadId === message.threadId && message.position < candidate.positionBelow);
  if (!level) return undefined;
  return level === levels.at(-1) ? message : asSeenFrom(sql, tenantId, levels, message);
}

/** The lineage's checkpoints, oldest first, from `fromVersion` on. */
export function readLineageCheckpoints(
  sql: Sql,
  tenantId: string,
  levels: readonly LineageLevel[],
  fromVersion = 0,
): CheckpointRecord[] {
  const statement = sql(
    `SELECT * FROM checkpoints WHERE tenant_id = ? AND thread_id = ? AND state_version BETWEEN ? AND ?
     ORDER BY state_version`,
  );
  return levels.flatMap((level) =>
    (statement.all(tenantId, level.threadId, fromVersion, level.maxVersion) as Row[]).map(toCheckpoint),
  );
}

/**
 * The operations a viewer sees: its own, and its ancestors' whose run's input is in the shared
 * prefix (the model context of a branch needs the outcome of a tool call it inherited).
 */
export function readLineageOperations(sql: Sql, tenantId: string, levels: readonly LineageLevel[]): OperationRecord[] {
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
  return levels.flatMap((level, index) => {
    const rows = index === levels.length - 1 ? own.all(tenantId, level.threadId) : inherited.all(tenantId, level.threadId, level.maxVersion);
    return (rows as Row[]).map(toOperation);
  });
}

/**
 * How many messages a lineage holds at `stateVersion` of `threadId` (whose own messages start at
 * `basePosition`): the base position of a branch forked there. One indexed row, whatever the length.
 */
export function prefixLength(sql: Sql, tenantId: string, threadId: string, basePosition: number, stateVersion: number): number {
  const last = sql(
    `SELECT position FROM messages WHERE tenant_id = ? AND thread_id = ? AND state_version <= ?
     ORDER BY state_version DESC LIMIT 1`,
  ).get(tenantId, threadId, stateVersion) as { position: number } | undefined;
  return last === undefined ? basePosition : last.position + 1;
}
