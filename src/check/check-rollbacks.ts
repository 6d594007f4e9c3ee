/**
 * Invariant 1's half for rollbacks (docs/decisions/012): a published message leaves the visible
 * result only through a checkpoint that records it. A run's input that is no longer published was
 * taken back by a `run_rolled_back` checkpoint of its thread; that checkpoint takes back the input of
 * a run that ended `cancelled` or `failed`, once, when nothing visible came after the input.
 */
import type { CheckpointRecord } from "../core/index.js";
import type { ThreadSnapshot } from "../store/index.js";
import type { Located } from "./violation.js";

/** Every rollback of the thread's own rows that breaks invariant 1, and every input gone without one. */
export function checkRollbacks(snapshot: ThreadSnapshot): Located[] {
  const found: Located[] = [];
  const rollbacks = snapshot.checkpoints.filter((checkpoint) => checkpoint.kind === "run_rolled_back");
  const index: ThreadIndex = {
    snapshot,
    positions: new Map(snapshot.messages.map((message, at) => [message.messageId, at])),
    deletes: new Map(
      snapshot.checkpoints
        .filter((checkpoint) => (checkpoint.kind === "run_rolled_back" || checkpoint.kind === "message_deleted") && checkpoint.messageId !== null)
        .map((checkpoint) => [checkpoint.messageId!, checkpoint]),
    ),
  };
  for (const message of snapshot.messages) {
    // A fragment's delete is its own edit (message_deleted); a user message is only ever taken back.
    if (message.role !== "user" || message.publicationStatus !== "deleted") continue;
    const taking = index.deletes.get(message.messageId);
    const isTakenBack = taking?.kind === "run_rolled_back" && taking.runId === message.runId && taking.stateVersion > message.stateVersion;
    if (!isTakenBack) {
      const detail = `published input ${message.messageId} of run ${message.runId ?? "none"} is deleted without a run_rolled_back checkpoint`;
      found.push({ invariant: 1, messageId: message.messageId, ...(message.runId === null ? {} : { runId: message.runId }), detail });
    }
  }
  const seenRuns = new Set<string>();
  for (const checkpoint of rollbacks) {
    found.push(...checkRollback(index, checkpoint, seenRuns));
  }
  return found;
}

/** The thread's rows, indexed once: each message's place in position order, each delete by the message it names. */
interface ThreadIndex {
  snapshot: ThreadSnapshot;
  positions: ReadonlyMap<string, number>;
  deletes: ReadonlyMap<string, CheckpointRecord>;
}

function checkRollback(index: ThreadIndex, checkpoint: CheckpointRecord, seenRuns: Set<string>): Located[] {
  const { snapshot } = index;
  const at = { invariant: 1, checkpointId: checkpoint.checkpointId, ...(checkpoint.runId === null ? {} : { runId: checkpoint.runId }) };
  const name = `rollback ${checkpoint.checkpointId} (v${checkpoint.stateVersion})`;
  const run = snapshot.runs.find((candidate) => candidate.runId === checkpoint.runId);
  if (!run) return [{ ...at, detail: `${name} names run ${checkpoint.runId ?? "none"}, which is not in the thread` }];
  const found: Located[] = [];
  if (seenRuns.has(run.runId)) found.push({ ...at, detail: `${name} rolls back run ${run.runId} a second time` });
  seenRuns.add(run.runId);
  if (run.status !== "cancelled" && run.status !== "failed") {
    found.push({ ...at, detail: `${name} rolls back run ${run.runId}, which is ${run.status}: only a cancelled or failed run's turn is taken back` });
  }
  const inputAt = checkpoint.messageId === null ? undefined : index.positions.get(checkpoint.messageId);
  const input = inputAt === undefined ? undefined : snapshot.messages[inputAt];
  if (!input || checkpoint.messageId !== run.inputMessageId) {
    return [...found, { ...at, detail: `${name} names message ${checkpoint.messageId ?? "none"}, not run ${run.runId}'s input in this thread` }];
  }
  if (input.publicationStatus !== "deleted") {
    found.push({ ...at, messageId: input.messageId, detail: `${name} took back input ${input.messageId}, which is still ${input.publicationStatus}` });
  }
  // Nothing visible came after the input when it was taken back: history never built on it. Messages
  // are appended in version order, so those after the input written before the rollback come first.
  for (const later of snapshot.messages.slice(inputAt! + 1)) {
    if (later.stateVersion >= checkpoint.stateVersion) break;
    const gone = later.publicationStatus === "deleted" ? index.deletes.get(later.messageId) : undefined;
    if (gone !== undefined && gone.stateVersion < checkpoint.stateVersion) continue;
    found.push({
      ...at,
      messageId: later.messageId,
      detail: `${name} took back input ${input.messageId} although message ${later.messageId} (v${later.stateVersion}) came after it`,
    });
  }
  return found;
}
