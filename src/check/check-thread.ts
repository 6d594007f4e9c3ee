/**
 * The per-thread half of `tidemark check` (docs/invariants.md): a pure function over one
 * {@link ThreadSnapshot} and what it inherits, so it runs the same on any adapter and on
 * hand-built fixtures.
 *
 * Invariant 7 (no tool call without an outcome in model context) is checked on the model context
 * of the thread's whole lineage, as the runtime builds it (see tool-call-tracker.ts). Invariant 2
 * (one idempotency key → one external action) is checked on the thread's operation ledger rows;
 * keys shared across threads of a tenant are found by `checkStore`, which sees every thread.
 * Invariants 9 to 12 (a run's plan) are checked on the steps of the thread's runs (check-plans.ts).
 */
import {
  canTransition,
  isRunStatus,
  isTerminalStatus,
  type CheckpointRecord,
  type MessageRecord,
  type OperationRecord,
  type RunRecord,
  type RunTransitionRecord,
} from "../core/index.js";
import type { ThreadSnapshot } from "../store/index.js";
import { checkPlans } from "./check-plans.js";
import { checkRollbacks } from "./check-rollbacks.js";
import { ownLineage, type ThreadLineage } from "./lineage-walker.js";
import type { FindCheckpoint, Located, Violation } from "./violation.js";

export type { Violation } from "./violation.js";

/**
 * Every violation of invariants 1 to 12 in one thread, ordered by invariant. A branch is checked
 * on its own rows; its shared prefix (checked in the thread that owns it) is where its parents
 * and its model context begin: `lineage` (default: nothing inherited, as for a root thread).
 */
export function checkThread(snapshot: ThreadSnapshot, lineage: ThreadLineage = ownLineage(snapshot)): Violation[] {
  const find: FindCheckpoint = (checkpointId) => lineage.checkpoint(checkpointId);
  const found: Located[] = snapshot.thread.status === "erased" ? checkErasedThread(snapshot) : [
    ...checkPublication(snapshot.messages, find),
    ...checkRollbacks(snapshot),
    ...checkOperations(snapshot.operations),
    ...checkLineage(snapshot, find),
    ...checkCancelBoundary(snapshot, find),
    ...checkVersions(snapshot, find),
    ...checkTransitions(snapshot.runs, snapshot.transitions),
    ...checkToolOutcomes(lineage.orphanToolCalls),
    ...checkDeletedThread(snapshot),
    ...checkPlans(snapshot.runs, snapshot.steps, find),
  ];
  const { tenantId, threadId } = snapshot.thread;
  return found.map((violation) => ({ ...violation, tenantId, threadId }));
}

/** A thread's first own version: 1, or one past the fork point for a branch. */
function firstVersion(snapshot: ThreadSnapshot): number {
  return (snapshot.thread.forkedFrom?.stateVersion ?? 0) + 1;
}

/** A root thread's first checkpoint: the only one allowed to have no parent. */
function isRoot(snapshot: ThreadSnapshot, checkpoint: CheckpointRecord): boolean {
  return snapshot.thread.forkedFrom === null && checkpoint.kind === "thread_created" && checkpoint.stateVersion === 1;
}

/** Invariant 1: a visible message is always published by a checkpoint that points back at it. */
function checkPublication(messages: MessageRecord[], find: FindCheckpoint): Located[] {
  const found: Located[] = [];
  for (const message of messages) {
    if (message.publicationStatus !== "published" && message.publicationStatus !== "fragment") continue;
    const at = { invariant: 1, messageId: message.messageId, checkpointId: message.checkpointId };
    const checkpoint = find(message.checkpointId);
    if (!checkpoint) {
      found.push({
        ...at,
        detail:
          `${message.publicationStatus} message ${message.messageId} ` +
          `points at missing checkpoint ${message.checkpointId}`,
      });
    } else if (checkpoint.messageId !== message.messageId) {
      found.push({
        ...at,
        detail:
          `checkpoint ${checkpoint.checkpointId} does not publish message ${message.messageId} ` +
          `(it references ${checkpoint.messageId ?? "no message"})`,
      });
    }
  }
  return found;
}

/**
 * Invariant 2: a key was handed to the external system at most once per preparation, and no two
 * rows share a key (the store's unique index should make the second impossible; checked anyway).
 */
function checkOperations(operations: OperationRecord[]): Located[] {
  const found: Located[] = [];
  const byKey = new Map<string, OperationRecord>();
  for (const operation of operations) {
    const at = { invariant: 2, runId: operation.runId, operationId: operation.opId };
    if (operation.commitAttempts > 1) {
      found.push({
        ...at,
        detail:
          `operation ${operation.opId} (key ${operation.idempotencyKey}) ` +
          `was handed to the external system ${operation.commitAttempts} times`,
      });
    }
    const first = byKey.get(operation.idempotencyKey);
    if (first) {
      found.push({
        ...at,
        detail: `operations ${first.opId} and ${operation.opId} share the idempotency key ${operation.idempotencyKey}`,
      });
    } else {
      byKey.set(operation.idempotencyKey, operation);
    }
  }
  return found;
}

/** Invariant 3: runs continue from, and checkpoints descend from, checkpoints of this thread's lineage. */
function checkLineage(snapshot: ThreadSnapshot, find: FindCheckpoint): Located[] {
  const found: Located[] = [];
  for (const run of snapshot.runs) {
    if (find(run.baseCheckpointId) === undefined) {
      found.push({
        invariant: 3,
        runId: run.runId,
        checkpointId: run.baseCheckpointId,
        detail: `run ${run.runId} continues from checkpoint ${run.baseCheckpointId}, which is not in the thread's lineage`,
      });
    }
  }
  const fork = snapshot.thread.forkedFrom;
  if (fork && find(fork.checkpointId)?.stateVersion !== fork.stateVersion) {
    found.push({
      invariant: 3,
      checkpointId: fork.checkpointId,
      detail: `branch forked from checkpoint ${fork.checkpointId} (v${fork.stateVersion}), which is not in its lineage at that version`,
    });
  }
  for (const checkpoint of snapshot.checkpoints) {
    if (isRoot(snapshot, checkpoint)) continue;
    const parentId = checkpoint.parentCheckpointId;
    if (parentId === null || find(parentId) === undefined) {
      const missing = parentId === null ? "no parent" : `missing parent ${parentId}`;
      found.push({
        invariant: 3,
        checkpointId: checkpoint.checkpointId,
        detail: `checkpoint ${checkpoint.checkpointId} (v${checkpoint.stateVersion}) has ${missing}`,
      });
    }
  }
  return found;
}

/** Invariant 4: nothing a run publishes is newer than the version at which its cancel was accepted. */
function checkCancelBoundary(snapshot: ThreadSnapshot, find: FindCheckpoint): Located[] {
  const found: Located[] = [];
  for (const run of snapshot.runs) {
    const at = { invariant: 4, runId: run.runId };
    const cancelVersion = run.cancelStateVersion;
    if (cancelVersion === null) {
      // Without the acceptance point the boundary cannot be checked, so its absence is the breach.
      if (run.status === "cancel_requested" || run.status === "cancelling" || run.status === "cancelled") {
        found.push({ ...at, detail: `run ${run.runId} is ${run.status} but records no accepted cancel version` });
      }
      continue;
    }
    const checkpoint = run.cancelCheckpointId === null ? undefined : find(run.cancelCheckpointId);
    if (!checkpoint || checkpoint.kind !== "cancel_accepted" || checkpoint.stateVersion !== cancelVersion) {
      found.push({
        ...at,
        ...(run.cancelCheckpointId === null ? {} : { checkpointId: run.cancelCheckpointId }),
        detail:
          `run ${run.runId} accepted its cancel at v${cancelVersion} ` +
          "but has no cancel_accepted checkpoint at that version",
      });
    }
    for (const message of snapshot.messages) {
      // Only "published": a fragment is the client's own save of what it saw, made after the Stop
      // on purpose (DESIGN §9), not something the run published.
      if (message.runId !== run.runId || message.publicationStatus !== "published") continue;
      if (message.stateVersion > cancelVersion) {
        found.push({
          ...at,
          messageId: message.messageId,
          checkpointId: message.checkpointId,
          detail:
            `run ${run.runId} published message ${message.messageId} at v${message.stateVersion}, ` +
            `after its cancel was accepted at v${cancelVersion}`,
        });
      }
    }
  }
  return found;
}

/**
 * Invariant 5: versions 1..N (a branch: fork version + 1..N), one own checkpoint each, chained by
 * one, with the head on top; a branch's first checkpoint descends from its fork checkpoint.
 */
function checkVersions(snapshot: ThreadSnapshot, find: FindCheckpoint): Located[] {
  const found: Located[] = [];
  const { thread } = snapshot;
  const first = firstVersion(snapshot);
  const byVersion = new Map<number, CheckpointRecord[]>();
  for (const checkpoint of snapshot.checkpoints) {
    const version = checkpoint.stateVersion;
    byVersion.set(version, [...(byVersion.get(version) ?? []), checkpoint]);
    if (!Number.isInteger(version) || version < first || version > thread.stateVersion) {
      found.push({
        invariant: 5,
        checkpointId: checkpoint.checkpointId,
        detail: `checkpoint ${checkpoint.checkpointId} has v${version}, outside the thread's ${first}..${thread.stateVersion}`,
      });
    }
  }
  found.push(...checkForkStart(snapshot, byVersion.get(first)?.[0]));
  for (let version = first; version <= thread.stateVersion; version++) {
    const holders = byVersion.get(version) ?? [];
    if (holders.length === 0) {
      found.push({ invariant: 5, detail: `no checkpoint holds v${version} of ${thread.stateVersion}` });
    } else if (holders.length > 1) {
      const ids = holders.map((holder) => holder.checkpointId).join(", ");
      found.push({ invariant: 5, detail: `v${version} is shared by checkpoints ${ids}` });
    }
  }
  for (const checkpoint of snapshot.checkpoints) {
    const parent = checkpoint.parentCheckpointId === null ? undefined : find(checkpoint.parentCheckpointId);
    const version = checkpoint.stateVersion;
    // A missing parent is invariant 3's finding; only a present one has a version to compare.
    if (isRoot(snapshot, checkpoint) || !parent || parent.stateVersion === version - 1) continue;
    found.push({
      invariant: 5,
      checkpointId: checkpoint.checkpointId,
      detail:
        `checkpoint ${checkpoint.checkpointId} (v${version}) has parent ${parent.checkpointId} ` +
        `at v${parent.stateVersion}, not v${version - 1}`,
    });
  }
  found.push(...checkHead(snapshot, find));
  for (const message of snapshot.messages) {
    const checkpoint = find(message.checkpointId);
    if (!checkpoint || checkpoint.stateVersion === message.stateVersion) continue;
    found.push({
      invariant: 5,
      messageId: message.messageId,
      checkpointId: checkpoint.checkpointId,
      detail:
        `message ${message.messageId} has v${message.stateVersion} ` +
        `but its checkpoint ${checkpoint.checkpointId} has v${checkpoint.stateVersion}`,
    });
  }
  return found;
}

/** Part of invariant 5: a branch's first own checkpoint is `fork_created`, child of the fork checkpoint. */
function checkForkStart(snapshot: ThreadSnapshot, start: CheckpointRecord | undefined): Located[] {
  const fork = snapshot.thread.forkedFrom;
  // A missing first version is reported by the version walk.
  if (!fork || !start) return [];
  if (start.kind === "fork_created" && start.parentCheckpointId === fork.checkpointId) return [];
  return [
    {
      invariant: 5,
      checkpointId: start.checkpointId,
      detail:
        `branch's first checkpoint ${start.checkpointId} (v${start.stateVersion}) is ${start.kind} ` +
        `with parent ${start.parentCheckpointId ?? "none"}, not fork_created from ${fork.checkpointId}`,
    },
  ];
}

/** Part of invariant 5: the thread's head is its newest checkpoint. */
function checkHead(snapshot: ThreadSnapshot, find: FindCheckpoint): Located[] {
  const { headCheckpointId } = snapshot.thread;
  const head = find(headCheckpointId);
  if (!head) {
    const detail = `head checkpoint ${headCheckpointId} is not in the thread`;
    return [{ invariant: 5, checkpointId: headCheckpointId, detail }];
  }
  // A thread without own checkpoints has its missing versions reported by the version walk.
  const newest = snapshot.checkpoints.reduce<CheckpointRecord | undefined>((a, b) => (a && a.stateVersion >= b.stateVersion ? a : b), undefined);
  if (!newest || newest.stateVersion === head.stateVersion) return [];
  return [
    {
      invariant: 5,
      checkpointId: headCheckpointId,
      detail:
        `head checkpoint ${headCheckpointId} has v${head.stateVersion} ` +
        `but ${newest.checkpointId} has v${newest.stateVersion}`,
    },
  ];
}

/** Invariant 6: each run's recorded history is a legal walk of the machine, never leaving a terminal status. */
function checkTransitions(runs: RunRecord[], transitions: RunTransitionRecord[]): Located[] {
  const found: Located[] = [];
  const byRun = new Map<string, RunTransitionRecord[]>();
  for (const transition of transitions) {
    byRun.set(transition.runId, [...(byRun.get(transition.runId) ?? []), transition]);
  }
  for (const run of runs) {
    found.push(...checkRunTransitions(run, byRun.get(run.runId) ?? []));
    byRun.delete(run.runId);
  }
  for (const runId of byRun.keys()) {
    const detail = `transitions are recorded for run ${runId}, which is not in the thread`;
    found.push({ invariant: 6, runId, detail });
  }
  return found;
}

function checkRunTransitions(run: RunRecord, unordered: RunTransitionRecord[]): Located[] {
  const found: Located[] = [];
  const at = { invariant: 6, runId: run.runId };
  const history = [...unordered].sort((a, b) => a.ordinal - b.ordinal);
  const ordinals = history.map((transition) => transition.ordinal);
  if (ordinals.some((ordinal, index) => ordinal !== index + 1)) {
    const detail = `run ${run.runId} has transition ordinals ${ordinals.join(",")}, not 1..${history.length}`;
    found.push({ ...at, detail });
  }
  const first = history[0];
  if (!first) return [...found, { ...at, detail: `run ${run.runId} has no recorded transitions` }];
  if (first.from !== null || first.to !== "queued") {
    const detail = `run ${run.runId} starts with ${first.from ?? "null"} → ${first.to}, not null → queued`;
    found.push({ ...at, detail });
  }
  let previous: RunTransitionRecord | undefined;
  for (const transition of history) {
    const step = `#${transition.ordinal} ${transition.from ?? "null"} → ${transition.to}`;
    if (!isRunStatus(transition.to) || (transition.from !== null && !isRunStatus(transition.from))) {
      found.push({ ...at, detail: `run ${run.runId} transition ${step} names an unknown status` });
    } else if (previous) {
      if (isRunStatus(previous.to) && isTerminalStatus(previous.to)) {
        found.push({ ...at, detail: `run ${run.runId} transition ${step} leaves terminal status ${previous.to}` });
      } else if (transition.from !== null && !canTransition(transition.from, transition.to)) {
        found.push({ ...at, detail: `run ${run.runId} transition ${step} is not allowed by the state machine` });
      }
      if (transition.from !== previous.to) {
        const where = `#${previous.ordinal} ended (${previous.to})`;
        const detail = `run ${run.runId} transition ${step} does not start where ${where}`;
        found.push({ ...at, detail });
      }
    }
    previous = transition;
  }
  if (previous && previous.to !== run.status) {
    const detail = `run ${run.runId} is ${run.status} but its last transition ends in ${previous.to}`;
    found.push({ ...at, detail });
  }
  return found;
}

/** Invariant 7: the model context built from the lineage's history has an outcome for every tool call. */
function checkToolOutcomes(orphanToolCalls: readonly string[]): Located[] {
  return orphanToolCalls.map((toolCallId) => ({
    invariant: 7,
    detail: `tool call ${toolCallId} has no outcome in model context`,
  }));
}

/**
 * An erased thread (docs/data/lifetimes.md) keeps only what the invariants need: its runs and
 * their transitions (invariant 6), its operations reduced (invariant 2), no run that could still
 * act (invariant 8), and its one `thread_erased` checkpoint at its version (invariant 5). Its
 * messages, checkpoints and steps are gone by design, so invariants 1, 3, 4, 7 and 9 to 12 have
 * nothing left to check.
 */
function checkErasedThread(snapshot: ThreadSnapshot): Located[] {
  const { thread } = snapshot;
  const found: Located[] = [...checkOperations(snapshot.operations), ...checkTransitions(snapshot.runs, snapshot.transitions)];
  for (const run of snapshot.runs) {
    if (!isTerminalStatus(run.status)) found.push({ invariant: 8, runId: run.runId, detail: `run ${run.runId} is ${run.status} on an erased thread` });
  }
  const [only, ...rest] = snapshot.checkpoints;
  if (!only || rest.length > 0 || only.kind !== "thread_erased" || only.checkpointId !== thread.headCheckpointId || only.stateVersion !== thread.stateVersion) {
    const kinds = snapshot.checkpoints.map((checkpoint) => `${checkpoint.kind} v${checkpoint.stateVersion}`).join(", ") || "none";
    found.push({ invariant: 5, detail: `erased thread at v${thread.stateVersion} must keep exactly its thread_erased head checkpoint, but has ${kinds}` });
  }
  for (const message of snapshot.messages) found.push({ invariant: 1, messageId: message.messageId, detail: `erased thread still holds message ${message.messageId}` });
  return found;
}

/**
 * Invariant 8: a deleted thread has no run that could still execute or publish. TERMINATE cancels
 * every run of the thread as it deletes it, so each is terminal or has its cancel accepted (a
 * `cancel_requested` or `cancelling` run is stopping; if it never ends, its lease says so).
 */
function checkDeletedThread(snapshot: ThreadSnapshot): Located[] {
  if (snapshot.thread.status !== "deleted") return [];
  return snapshot.runs
    .filter((run) => run.status === "queued" || run.status === "running" || run.status === "interrupted")
    .map((run) => ({ invariant: 8, runId: run.runId, detail: `run ${run.runId} is ${run.status} on a deleted thread` }));
}
