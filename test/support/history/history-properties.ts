/**
 * The properties a recorded history must hold, each a function from the history to the
 * violations it finds, with the records that show each one. They are DESIGN §15's invariants
 * and §7's stream contract as a client sees them; `tidemark check` judges the store's rows
 * beside them.
 */
import type { RunEvent } from "../../../src/core/index.js";
import { TERMINAL_TYPES, type History, type HistoryViolation, type OperationRecord, type StreamRead } from "./history-types.js";

const STATUS_OF_TERMINAL: Record<string, string> = { "run.completed": "completed", "run.cancelled": "cancelled", "run.failed": "failed" };

/** Every SSE read of the history, with its operation (the final reads included). */
function readsOf(history: History): { operation: OperationRecord | undefined; read: StreamRead }[] {
  const reads: { operation: OperationRecord | undefined; read: StreamRead }[] = [];
  for (const operation of history.operations) if (operation.read) reads.push({ operation, read: operation.read });
  for (const read of history.final.streams.values()) reads.push({ operation: undefined, read });
  return reads;
}

/** A short form of an event, for evidence. */
const brief = (event: RunEvent | undefined): string => (event === undefined ? "none" : `${event.seq} ${event.type}`);

/**
 * A client that reconnects with `Last-Event-ID` sees each event of a run once and none skipped:
 * each read starts right after the last event that client saw, its seqs follow on by one, nothing
 * follows the terminal event, and the server never ends a stream before the terminal event (a
 * reconnect after it is answered with an empty stream). Two
 * clients that see one seq of a run see the same event.
 */
export function checkReconnects(history: History): HistoryViolation[] {
  const found: HistoryViolation[] = [];
  const cursors = new Map<string, { seq: number; isEnded: boolean; operation: number }>();
  const bySeq = new Map<string, { json: string; operation: number | undefined }>();
  for (const { operation, read } of readsOf(history)) {
    const client = operation?.client ?? "final";
    const key = `${client} ${read.runId}`;
    const cursor = cursors.get(key) ?? { seq: 0, isEnded: false, operation: -1 };
    const evidence = [operation ?? { client: "final", read }];
    if (read.outcome === "refused") found.push({ property: "reconnect", runId: read.runId, detail: `${client}: the events of a run it created answered ${read.status}`, evidence });
    // After the terminal event the server answers a reconnect with an empty stream: that is the end, not a cut.
    if (read.outcome === "closed" && !(cursor.isEnded && read.events.length === 0)) {
      found.push({
        property: "reconnect",
        runId: read.runId,
        detail: `${client}: the server ended the stream after ${brief(read.events.at(-1))}, before a terminal event`,
        evidence: [...evidence, { whole: history.final.streams.get(read.runId)?.events.map(brief) }],
      });
    }
    if (read.lastEventId !== cursor.seq) {
      found.push({ property: "reconnect", runId: read.runId, detail: `${client} reconnected with Last-Event-ID ${read.lastEventId}, but had seen up to ${cursor.seq}`, evidence });
    }
    let previous = read.lastEventId;
    for (const event of read.events) {
      if (cursor.isEnded) {
        found.push({ property: "reconnect", runId: read.runId, detail: `${client} saw ${brief(event)} after the run's terminal event`, evidence });
      } else if (event.seq !== previous + 1) {
        const what = event.seq <= previous ? "again" : `after ${previous}: ${event.seq - previous - 1} skipped`;
        found.push({ property: "reconnect", runId: read.runId, detail: `${client} saw seq ${event.seq} ${what}`, evidence });
      }
      previous = event.seq;
      if (TERMINAL_TYPES.has(event.type)) cursor.isEnded = true;
      const json = JSON.stringify(event);
      const first = bySeq.get(`${read.runId} ${event.seq}`);
      if (first === undefined) bySeq.set(`${read.runId} ${event.seq}`, { json, operation: operation?.index });
      else if (first.json !== json) {
        found.push({ property: "reconnect", runId: read.runId, detail: `two clients saw different events at seq ${event.seq}`, evidence: [first, json] });
      }
    }
    cursors.set(key, { seq: previous, isEnded: cursor.isEnded, operation: operation?.index ?? -1 });
  }
  return found;
}

/**
 * Every run ends with a terminal event, and that event agrees with `GET /v1/runs/{id}`: the same
 * status, and for a completed run the same published message and version.
 */
export function checkFinalStatus(history: History): HistoryViolation[] {
  const found: HistoryViolation[] = [];
  for (const [runId, reply] of history.final.runs) {
    const read = history.final.streams.get(runId);
    const last = read?.events.at(-1);
    const run = reply.body;
    if (read?.outcome !== "terminal" || last === undefined) {
      found.push({ property: "final status", runId, detail: `the run's stream ended ${read?.outcome} at ${brief(last)}, not with a terminal event`, evidence: [run, read] });
      continue;
    }
    if (STATUS_OF_TERMINAL[last.type] !== run.status) {
      found.push({ property: "final status", runId, detail: `the last event is ${last.type} but the run's status is ${run.status}`, evidence: [last, run] });
    }
    if (last.type === "run.completed" && (last.published_message_id !== run.published_message_id || last.state_version > run.state_version)) {
      found.push({ property: "final status", runId, detail: "run.completed and the run's status model disagree on its publication", evidence: [last, run] });
    }
  }
  return found;
}

/**
 * Each message a client saw published is in its thread's history, published, at the version and
 * checkpoint the event named (or its input was taken back by a recorded rollback); each fragment a
 * client saved is there as a fragment; a run's `published_message_id` was published on its stream.
 */
export function checkPublishedInHistory(history: History): HistoryViolation[] {
  const found: HistoryViolation[] = [];
  const threadOf = (runId: string): string | undefined => history.final.runs.get(runId)?.body.thread_id;
  const messageIn = (threadId: string, messageId: string): any => history.final.histories.get(threadId)?.messages.find((message: any) => message.message_id === messageId);
  const isRolledBack = (threadId: string, messageId: string): boolean =>
    (history.final.checkpoints.get(threadId)?.checkpoints ?? []).some((checkpoint: any) => checkpoint.kind === "run_rolled_back" && checkpoint.message_id === messageId);
  for (const { operation, read } of readsOf(history)) {
    const threadId = threadOf(read.runId);
    if (threadId === undefined) continue;
    for (const event of read.events) {
      if (event.type !== "message.published") continue;
      const message = messageIn(threadId, event.message_id);
      if (message === undefined && event.role === "user" && isRolledBack(threadId, event.message_id)) continue;
      if (message?.publication_status !== "published" || message.state_version !== event.state_version || message.checkpoint_id !== event.checkpoint_id) {
        found.push({
          property: "published in history",
          runId: read.runId,
          threadId,
          detail: `${operation?.client ?? "final"} saw ${event.message_id} published at v${event.state_version}; history has ${message === undefined ? "no such message" : `${message.publication_status} at v${message.state_version}`}`,
          evidence: [event, message],
        });
      }
    }
  }
  for (const operation of history.operations) {
    if (operation.kind !== "fragment" || operation.reply?.status !== 201 || operation.threadId === undefined) continue;
    const message = messageIn(operation.threadId, operation.reply.body.message_id);
    if (message?.publication_status !== "fragment") {
      found.push({ property: "published in history", runId: operation.runId, threadId: operation.threadId, detail: "a saved fragment is not in history as a fragment", evidence: [operation, message] });
    }
  }
  for (const [runId, reply] of history.final.runs) {
    const published = reply.body.published_message_id;
    if (published === null) continue;
    const events = history.final.streams.get(runId)?.events ?? [];
    if (!events.some((event) => event.type === "message.published" && event.message_id === published)) {
      found.push({ property: "published in history", runId, detail: `the run names ${published} as published, but its stream never published it`, evidence: [reply.body] });
    }
  }
  return found;
}

/**
 * Nothing after an accepted cancel: once a run's stream says `run.cancel_requested`, it has no
 * more text or publication, no publication newer than the accepted version (in its stream or in
 * history), no commit unless the operation was approved before the cancel, and it ends
 * `cancelled`. A cancel answered 202 leads to `cancelled`; one answered as terminal names the
 * run's real final status.
 */
export function checkNothingAfterCancel(history: History): HistoryViolation[] {
  const found: HistoryViolation[] = [];
  for (const [runId, read] of history.final.streams) {
    const at = read.events.findIndex((event) => event.type === "run.cancel_requested");
    if (at < 0) continue;
    const accepted = read.events[at] as Extract<RunEvent, { type: "run.cancel_requested" }>;
    const approvedBefore = read.events.slice(0, at).some((event) => event.type === "run.resumed" && event.decision === "approved");
    const late = read.events.slice(at + 1).filter(
      (event) =>
        event.type === "message.delta" ||
        event.type === "message.published" ||
        event.type === "run.completed" ||
        (event.type === "tool.committed" && event.phase === "committed" && !approvedBefore),
    );
    if (late.length > 0) {
      found.push({
        property: "nothing after cancel",
        runId,
        detail: `${late.length} event(s) of text, publication or commit after the cancel accepted at seq ${accepted.seq} (v${accepted.accepted_state_version}), from ${brief(late[0])}`,
        evidence: [accepted, late, { whole: read.events.map(brief) }, operationsOn(history, runId)],
      });
    }
    const threadId = history.final.runs.get(runId)?.body.thread_id;
    for (const message of history.final.histories.get(threadId)?.messages ?? []) {
      if (message.run_id === runId && message.publication_status === "published" && message.role !== "user" && message.state_version > accepted.accepted_state_version) {
        found.push({ property: "nothing after cancel", runId, threadId, detail: `history holds ${message.message_id} of the run at v${message.state_version}, after its cancel at v${accepted.accepted_state_version}`, evidence: [accepted, message] });
      }
    }
    const final = history.final.runs.get(runId)?.body.status;
    if (final !== "cancelled") found.push({ property: "nothing after cancel", runId, detail: `the run's cancel was accepted, but it ended ${final}`, evidence: [accepted, read.events.at(-1)] });
  }
  for (const operation of history.operations) {
    if (operation.kind !== "cancel" || operation.runId === undefined || operation.reply === undefined) continue;
    const final = history.final.runs.get(operation.runId)?.body.status;
    const { status, body } = operation.reply;
    const expected = status === 202 && body.already_terminal === false ? "cancelled" : status === 200 ? body.status : undefined;
    if (expected !== undefined && final !== expected) {
      found.push({ property: "nothing after cancel", runId: operation.runId, detail: `the cancel answered ${status} ${body.status}, but the run ended ${final}`, evidence: [operation] });
    }
    if (status !== 200 && status !== 202) found.push({ property: "nothing after cancel", runId: operation.runId, detail: `a Stop was refused with ${status}`, evidence: [operation] });
  }
  return found;
}

/**
 * `state_version` as the client sees it: within a run's stream each new checkpoint has a newer
 * version; every checkpoint a client saw is in its thread's chain at that version; and each
 * transition a client makes (a run, a Continue, a fragment) lands above every version it had
 * already seen of the thread, while a Stop's reply, or an enqueued run's (it waits without a
 * transition), never goes back.
 */
export function checkVersions(history: History): HistoryViolation[] {
  const found: HistoryViolation[] = [];
  for (const [runId, read] of history.final.streams) {
    const threadId = history.final.runs.get(runId)?.body.thread_id;
    const chain = new Map<string, number>((history.final.checkpoints.get(threadId)?.checkpoints ?? []).map((checkpoint: any) => [checkpoint.checkpoint_id, checkpoint.state_version]));
    let previous: { checkpointId: string; version: number; seq: number } | undefined;
    for (const event of read.events) {
      const seen = checkpointOf(event);
      if (seen === undefined) continue;
      if (chain.get(seen.checkpointId) !== seen.version) {
        found.push({ property: "versions", runId, threadId, detail: `${brief(event)} names ${seen.checkpointId} at v${seen.version}; the thread's chain has it at ${chain.get(seen.checkpointId) ?? "no version"}`, evidence: [event] });
      }
      if (previous !== undefined && previous.checkpointId !== seen.checkpointId && seen.version <= previous.version) {
        found.push({ property: "versions", runId, threadId, detail: `${brief(event)} is at v${seen.version}, not after v${previous.version} (seq ${previous.seq})`, evidence: [event] });
      }
      previous = { ...seen, seq: event.seq };
    }
  }
  const seenBy = new Map<string, number>();
  for (const operation of [...history.operations].sort((a, b) => a.returnedAt - b.returnedAt)) {
    if (operation.threadId === undefined) continue;
    const key = `${operation.client} ${operation.threadId}`;
    // What this client had seen when it invoked the operation: its operations are sequential.
    const before = seenBy.get(key) ?? 0;
    const made = versionMade(operation);
    if (made !== undefined && (made.isNew ? made.version <= before : made.version < before)) {
      found.push({ property: "versions", runId: operation.runId, threadId: operation.threadId, detail: `${operation.client}'s ${operation.kind} answered v${made.version}, but it had already seen v${before}`, evidence: [operation] });
    }
    seenBy.set(key, Math.max(before, made?.version ?? 0, ...versionsSeen(operation)));
  }
  return found;
}

/** The checkpoint and version an event names, if it names one. */
function checkpointOf(event: RunEvent): { checkpointId: string; version: number } | undefined {
  if (event.type === "message.published" || event.type === "checkpoint.saved") return { checkpointId: event.checkpoint_id, version: event.state_version };
  if (event.type === "run.cancel_requested") return { checkpointId: event.resume_checkpoint_id, version: event.accepted_state_version };
  return undefined;
}

/** The version an operation's reply says the thread is at after it: `isNew` when it is the operation's own transition. */
function versionMade(operation: OperationRecord): { version: number; isNew: boolean } | undefined {
  const { reply } = operation;
  if (reply === undefined) return undefined;
  const isCreate = operation.kind === "create_run" || operation.kind === "continue";
  // 200: the same create repeated; the run was made before.
  // An enqueued run waits without moving the thread (docs/api.md): its reply says the version it found.
  const isEnqueued = (operation.request as { multitask?: string } | undefined)?.multitask === "enqueue";
  if (isCreate && reply.status === 201) return { version: reply.body.state_version, isNew: !isEnqueued };
  if (operation.kind === "fragment" && reply.status === 201) return { version: reply.body.state_version, isNew: true };
  if (operation.kind === "cancel" && typeof reply.body?.accepted_state_version === "number") return { version: reply.body.accepted_state_version, isNew: false };
  return undefined;
}

/** The versions of the operation's thread that the operation's events showed its client. */
function versionsSeen(operation: OperationRecord): number[] {
  const versions: number[] = [];
  for (const event of operation.read?.events ?? []) {
    const seen = checkpointOf(event);
    if (seen !== undefined) versions.push(seen.version);
  }
  return versions;
}

/** The operations that named `runId`, briefly: who did what to it, in order. */
function operationsOn(history: History, runId: string): string[] {
  return history.operations
    .filter((operation) => operation.runId === runId)
    .map((operation) => `${operation.invokedAt}-${operation.returnedAt} ${operation.client} ${operation.kind} ${operation.reply?.status ?? operation.read?.outcome ?? operation.note ?? ""} ${JSON.stringify(operation.request ?? "")}`);
}

/** All the properties, in the order they are reported. */
export const HISTORY_PROPERTIES = [checkReconnects, checkFinalStatus, checkPublishedInHistory, checkNothingAfterCancel, checkVersions] as const;

/** Every violation of every property. */
export function checkHistory(history: History): HistoryViolation[] {
  return HISTORY_PROPERTIES.flatMap((property) => property(history));
}
