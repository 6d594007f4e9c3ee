import type { RunEvent } from "../../../src/core/index.js";
import type { OperationKind, OperationRecord, Reply, StreamRead } from "./history-types.js";
import { readRunStream, type ReadLimits } from "./read-run-stream.js";

/**
 * Records every operation of a history test's clients against a real server: each call's
 * invocation and return on one logical clock, its request and its reply, and for an SSE read the
 * events it saw. Clients share the recorder (one history) but each keeps its own view: where it
 * stopped reading each run (its `Last-Event-ID`), the last text it saw, and the newest
 * `state_version` it saw of each thread.
 */
export class HistoryRecorder {
  readonly operations: OperationRecord[] = [];
  /** The thread of each run any client created (runs are addressed without their thread). */
  readonly threadOfRun = new Map<string, string>();
  #tick = 0;

  constructor(readonly url: string) {}

  /** A client with its own view, recording into this history. */
  client(name: string): RecordingClient {
    return new RecordingClient(this, name);
  }

  /** Records `action` as one operation of `client`. */
  async record(
    client: string,
    kind: OperationKind,
    fields: Pick<OperationRecord, "threadId" | "runId" | "request">,
    action: () => Promise<Pick<OperationRecord, "reply" | "read" | "note">>,
  ): Promise<OperationRecord> {
    const operation: OperationRecord = { index: this.operations.length, client, kind, ...fields, invokedAt: this.#tick++, returnedAt: -1 };
    this.operations.push(operation);
    try {
      Object.assign(operation, await action());
    } catch (error) {
      operation.note = `transport error: ${error instanceof Error ? error.message : String(error)}`;
    }
    operation.returnedAt = this.#tick++;
    return operation;
  }

  /** Records an operation that was not sent, and why. */
  skip(client: string, kind: OperationKind, note: string): void {
    const tick = this.#tick++;
    this.operations.push({ index: this.operations.length, client, kind, invokedAt: tick, returnedAt: tick, note });
  }

  /** One JSON call to the server. */
  async call(path: string, init: { method?: string; json?: unknown } = {}): Promise<Reply> {
    const response = await fetch(`${this.url}${path}`, {
      method: init.method ?? "GET",
      headers: init.json === undefined ? {} : { "content-type": "application/json" },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: kept as text, as evidence
    }
    return { status: response.status, body };
  }
}

/** One client of a history test: what it calls is recorded, and it remembers what it saw. */
export class RecordingClient {
  /** The seq of the last event this client read of each run: its `Last-Event-ID` on a reconnect. */
  readonly cursors = new Map<string, number>();
  /** The last delta this client saw of each run: what it would save as a fragment. */
  readonly lastDelta = new Map<string, { messageId: string; seq: number }>();
  /** The newest state_version this client saw of each thread. */
  readonly versions = new Map<string, number>();

  constructor(
    readonly recorder: HistoryRecorder,
    readonly name: string,
  ) {}

  async createThread(): Promise<string | undefined> {
    const operation = await this.#record("create_thread", {}, async () => ({ reply: await this.recorder.call("/v1/threads", { method: "POST", json: {} }) }));
    const body = operation.reply?.status === 201 ? operation.reply.body : undefined;
    if (body === undefined) return undefined;
    this.#saw(body.thread_id, body.state_version);
    return body.thread_id as string;
  }

  /** `POST /v1/threads/{id}/runs` with `body`; a run it starts is known to every client. */
  async createRun(threadId: string, body: Record<string, unknown>, kind: "create_run" | "continue" = "create_run"): Promise<Reply | undefined> {
    const operation = await this.#record(kind, { threadId, request: body }, async () => ({
      reply: await this.recorder.call(`/v1/threads/${threadId}/runs`, { method: "POST", json: body }),
    }));
    const reply = operation.reply;
    if (reply?.status === 201 || reply?.status === 200) {
      operation.runId = reply.body.run_id;
      this.recorder.threadOfRun.set(reply.body.run_id, threadId);
      this.#saw(threadId, reply.body.state_version);
    } else if (reply?.body?.current_state_version !== undefined) {
      this.#saw(threadId, reply.body.current_state_version);
    }
    return reply;
  }

  /** Reads `runId`'s events from where this client stopped (a reconnect with `Last-Event-ID`). */
  async stream(runId: string, limits: ReadLimits): Promise<StreamRead | undefined> {
    const lastEventId = this.cursors.get(runId) ?? 0;
    const operation = await this.#record("stream", { runId, threadId: this.recorder.threadOfRun.get(runId), request: { lastEventId, ...limits } }, async () => ({
      read: await readRunStream(this.recorder.url, runId, lastEventId, limits),
    }));
    for (const event of operation.read?.events ?? []) this.#see(runId, event);
    return operation.read;
  }

  /** Stop; with `waitMs`, the reply comes once the run is terminal (`?wait=`). */
  async cancel(runId: string, waitMs?: number): Promise<Reply | undefined> {
    const threadId = this.recorder.threadOfRun.get(runId);
    const query = waitMs === undefined ? "" : `?wait=${waitMs}`;
    const operation = await this.#record("cancel", { runId, threadId, request: { waitMs } }, async () => ({
      reply: await this.recorder.call(`/v1/runs/${runId}/cancel${query}`, { method: "POST", json: { reason: "user_pressed_stop" } }),
    }));
    if (threadId !== undefined && typeof operation.reply?.body?.accepted_state_version === "number") this.#saw(threadId, operation.reply.body.accepted_state_version);
    return operation.reply;
  }

  async decide(runId: string, decision: "approve" | "reject"): Promise<Reply | undefined> {
    const operation = await this.#record("decide", { runId, threadId: this.recorder.threadOfRun.get(runId), request: { decision } }, async () => ({
      reply: await this.recorder.call(`/v1/runs/${runId}/${decision}`, { method: "POST" }),
    }));
    return operation.reply;
  }

  async getRun(runId: string): Promise<Reply | undefined> {
    const operation = await this.#record("get_run", { runId, threadId: this.recorder.threadOfRun.get(runId) }, async () => ({ reply: await this.recorder.call(`/v1/runs/${runId}`) }));
    return operation.reply;
  }

  /** The version this client builds on: the newest it saw of the thread, else the thread's as read now. */
  async knownVersion(threadId: string): Promise<number> {
    const known = this.versions.get(threadId);
    if (known !== undefined) return known;
    const operation = await this.#record("get_thread", { threadId }, async () => ({ reply: await this.recorder.call(`/v1/threads/${threadId}`) }));
    this.#saw(threadId, operation.reply?.body?.state_version);
    return this.versions.get(threadId) ?? 0;
  }

  /** Continue: a new run from the run's resume checkpoint, built on the version this client knows. */
  async continueRun(runId: string): Promise<Reply | undefined> {
    const threadId = this.recorder.threadOfRun.get(runId);
    const run = await this.getRun(runId);
    const checkpointId = run?.body?.resume_checkpoint_id;
    if (threadId === undefined || typeof checkpointId !== "string") {
      this.recorder.skip(this.name, "continue", `run ${runId} has no resume checkpoint (${run?.body?.status})`);
      return undefined;
    }
    return this.createRun(threadId, { resume_from_checkpoint_id: checkpointId, expected_state_version: await this.knownVersion(threadId) }, "continue");
  }

  /** A branch from `checkpointId` of the run's thread; the new thread's id, if it was made. */
  async fork(threadId: string, checkpointId: string): Promise<string | undefined> {
    const operation = await this.#record("fork", { threadId, request: { from_checkpoint_id: checkpointId } }, async () => ({
      reply: await this.recorder.call(`/v1/threads/${threadId}/fork`, { method: "POST", json: { from_checkpoint_id: checkpointId } }),
    }));
    const body = operation.reply?.status === 201 ? operation.reply.body : undefined;
    if (body === undefined) return undefined;
    this.#saw(body.thread_id, body.state_version);
    return body.thread_id as string;
  }

  /** Saves the text this client saw of the run (up to its last delta) as a fragment. */
  async saveFragment(runId: string): Promise<Reply | undefined> {
    const seen = this.lastDelta.get(runId);
    if (seen === undefined) {
      this.recorder.skip(this.name, "fragment", `saw no text of ${runId}`);
      return undefined;
    }
    const threadId = this.recorder.threadOfRun.get(runId);
    const request = { message_id: seen.messageId, last_seq: seen.seq };
    const operation = await this.#record("fragment", { runId, threadId, request }, async () => ({
      reply: await this.recorder.call(`/v1/runs/${runId}/fragments`, { method: "POST", json: request }),
    }));
    if (threadId !== undefined && operation.reply?.status === 201) this.#saw(threadId, operation.reply.body.state_version);
    return operation.reply;
  }

  /** Records that this client let a gated answer go on (the call itself is the test's). */
  async release(runId: string, open: () => void): Promise<void> {
    await this.#record("release", { runId, threadId: this.recorder.threadOfRun.get(runId) }, async () => {
      open();
      return { note: "opened" };
    });
  }

  #record(
    kind: OperationKind,
    fields: Pick<OperationRecord, "threadId" | "runId" | "request">,
    action: () => Promise<Pick<OperationRecord, "reply" | "read" | "note">>,
  ): Promise<OperationRecord> {
    return this.recorder.record(this.name, kind, fields, action);
  }

  #see(runId: string, event: RunEvent): void {
    this.cursors.set(runId, event.seq);
    if (event.type === "message.delta") this.lastDelta.set(runId, { messageId: event.message_id, seq: event.seq });
    const threadId = this.recorder.threadOfRun.get(runId);
    if (threadId !== undefined && "state_version" in event) this.#saw(threadId, event.state_version);
    if (threadId !== undefined && event.type === "run.cancel_requested") this.#saw(threadId, event.accepted_state_version);
  }

  #saw(threadId: string, version: unknown): void {
    if (typeof version === "number" && version > (this.versions.get(threadId) ?? -1)) this.versions.set(threadId, version);
  }
}
