/**
 * Clients for the chaos tests: seeded turns (an answer read to its end, a Stop, a Stop then
 * Continue, a dropped connection resumed with Last-Event-ID, an approved email) against real
 * server processes that may be killed or lose their database mid-turn. Everything a client sent
 * and saw is recorded in a {@link ChaosRecord}, checked as it comes (gapless seqs across
 * reconnects, nothing after the terminal event, no delta or publication after an accepted
 * cancel), and, once the fault is over, against what the server says (see {@link settleRuns}).
 */
import type { RunEvent } from "../../src/core/index.js";
import { createId } from "../../src/core/index.js";
import { readSseEvents } from "../../src/stream/index.js";
import { ATTEMPT_STRIDE, attemptOfSeq, TERMINAL_EVENTS } from "./cluster.js";
import { eventually } from "./eventually.js";

export type TurnKind = "complete" | "stop" | "stop_continue" | "disconnect" | "email";
export const TURN_KINDS: readonly TurnKind[] = ["complete", "stop", "stop_continue", "disconnect", "email"];

/** A request or a stream that a fault cut (the process died, or the database was away). */
export class RequestCut extends Error {}

/** One run, as the clients saw it. */
export interface RunSeen {
  runId: string;
  threadId: string;
  turn: TurnKind | "continue" | "follow_up";
  cycle: number;
  policy: "fail" | "resume";
  /** Every event seen, in order, across reads (a reconnect asks for what follows the last one). */
  events: RunEvent[];
  /** A Stop answered 202 (not already terminal): the run must end `cancelled`. */
  isStopAccepted: boolean;
  /** Stop requests sent (a cut one is sent again). */
  stopsSent: number;
  /** A request of the turn or its stream was cut by a fault. */
  isCut: boolean;
  /** The server said the stream is gone (410): history is the truth. */
  isStreamGone: boolean;
}

/** What every client of a chaos test saw and what broke. */
export class ChaosRecord {
  readonly runs = new Map<string, RunSeen>();
  /** Message ids a client saw published, by thread. */
  readonly published = new Map<string, Set<string>>();
  readonly violations: string[] = [];
  /** Requests and streams a fault cut, by what was cut (expected under faults; counted). */
  readonly cuts = new Map<string, number>();
  readonly turns = new Map<string, number>();
  /** Events seen by every client. */
  eventCount = 0;
  readonly #tripwires: { at: number; resolve: () => void }[] = [];
  readonly #requestWires: { what: string; base: string; resolve: () => void }[] = [];

  violation(text: string): void {
    this.violations.push(text);
  }

  cut(what: string): void {
    this.cuts.set(what, (this.cuts.get(what) ?? 0) + 1);
  }

  seen(run: RunSeen, event: RunEvent): void {
    this.eventCount++;
    for (const wire of [...this.#tripwires]) {
      if (this.eventCount >= wire.at) {
        this.#tripwires.splice(this.#tripwires.indexOf(wire), 1);
        wire.resolve();
      }
    }
    if (event.type === "message.published") {
      const ids = this.published.get(run.threadId) ?? new Set<string>();
      ids.add(event.message_id);
      this.published.set(run.threadId, ids);
    }
  }

  /** A client is sending a request (`what`) to `base`. */
  sending(what: string, base: string): void {
    for (const wire of [...this.#requestWires]) {
      if (wire.what === what && wire.base === base) {
        this.#requestWires.splice(this.#requestWires.indexOf(wire), 1);
        wire.resolve();
      }
    }
  }

  /** Resolves as the next request `what` is sent to `base` (a fault's trigger: it lands while that request is in flight). */
  nextRequest(what: string, base: string): Promise<void> {
    return new Promise((resolve) => this.#requestWires.push({ what, base, resolve }));
  }

  /** Resolves once the clients together saw `count` more events (the fault's trigger). */
  afterEvents(count: number): Promise<void> {
    const at = this.eventCount + count;
    return new Promise((resolve) => this.#tripwires.push({ at, resolve }));
  }

  /** Counts by kind, for the test's report line. */
  summary(): Record<string, unknown> {
    return {
      runs: this.runs.size,
      turns: Object.fromEntries(this.turns),
      events: this.eventCount,
      cuts: Object.fromEntries(this.cuts),
      stops_accepted: [...this.runs.values()].filter((run) => run.isStopAccepted).length,
      violations: this.violations.length,
    };
  }
}

/** Waits until the clients saw `count` more events; fails if every client loop ended first (nothing would ever trigger the fault). */
export async function afterEventsOrEnd(record: ChaosRecord, count: number, loops: readonly Promise<unknown>[]): Promise<void> {
  const ended = Promise.all(loops).then(() => {
    throw new Error(`every client ended before ${count} more events; violations: ${record.violations.join("\n")}`);
  });
  await Promise.race([record.afterEvents(count), ended]);
}

/** A seeded PRNG (mulberry32): a client's choices replay from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export interface ChaosClientOptions {
  record: ChaosRecord;
  /** The API processes' addresses; the client starts on `apis()[first]`. */
  apis: () => readonly string[];
  first: number;
  /**
   * On a cut request, go on through the next API process (a Stop and a create are sent again, a
   * stream is resumed with Last-Event-ID); without it a cut ends the client's turn.
   */
  isFailover: boolean;
  draw: () => number;
  threadId: string;
  cycle: number;
  /** Whether a 5xx answer is a fault's (counted as a cut) rather than a violation. */
  isServerErrorExpected?: () => boolean;
  /** Guard for one stream read (a hang is a violation, never a wait the test relies on). */
  readTimeoutMs?: number;
}

type Reply = { status: number; body: any };

/** One user on one thread, doing seeded turns. */
export class ChaosClient {
  readonly #options: ChaosClientOptions;
  #api: number;

  constructor(options: ChaosClientOptions) {
    this.#options = options;
    this.#api = options.first;
  }

  get base(): string {
    const apis = this.#options.apis();
    return apis[this.#api % apis.length]!;
  }

  /** Turns until `isDone()` says stop (checked between turns) or a fault cut a turn (without failover). */
  async loop(isDone: () => boolean): Promise<void> {
    while (!isDone()) {
      try {
        await this.turn(this.#drawTurn());
      } catch (error) {
        if (error instanceof RequestCut) return;
        throw error;
      }
    }
  }

  #drawTurn(): TurnKind {
    const roll = this.#options.draw();
    return roll < 0.25 ? "complete" : roll < 0.45 ? "stop" : roll < 0.6 ? "stop_continue" : roll < 0.8 ? "disconnect" : "email";
  }

  /** One turn of `kind` on the client's thread. */
  async turn(kind: TurnKind): Promise<void> {
    const { record, draw } = this.#options;
    record.turns.set(kind, (record.turns.get(kind) ?? 0) + 1);
    const wordsBefore = 1 + Math.floor(draw() * 6);
    const policy = draw() < 0.5 ? "fail" : "resume";
    const content =
      kind === "email"
        ? `Please email user${Math.floor(draw() * 1e6)}@example.com about order ${this.#options.cycle}-${createId("op").slice(-8)}`
        : `Chaos turn (${kind}), please answer at length.`;
    const run = await this.create(kind, { input: { role: "user", content }, recovery_policy: policy }, policy);
    const deltas = (): number => run.events.filter((event) => event.type === "message.delta").length;
    if (kind === "complete") {
      await this.read(run);
    } else if (kind === "disconnect") {
      await this.read(run, (event) => event.type === "message.delta" && deltas() >= wordsBefore);
      await this.read(run);
    } else if (kind === "email") {
      await this.read(run, (event) => event.type === "run.interrupted");
      if (run.events.some((event) => event.type === "run.interrupted") && !this.#isEnded(run)) {
        const approved = await this.send("POST", `/v1/runs/${run.runId}/approve`, {}, "approve");
        if (![200, 409].includes(approved.status)) record.violation(`${run.runId}: approve answered ${approved.status} ${JSON.stringify(approved.body)}`);
      }
      await this.read(run);
    } else {
      await this.read(run, (event) => event.type === "message.delta" && deltas() >= wordsBefore);
      const reply = await this.stop(run);
      await this.read(run);
      if (kind === "stop_continue" && reply?.status === 202 && reply.body.already_terminal !== true) {
        const resumed = await this.create(
          "continue",
          { resume_from_checkpoint_id: reply.body.resume_checkpoint_id, expected_state_version: reply.body.accepted_state_version, recovery_policy: policy },
          policy,
        );
        await this.read(resumed);
      }
    }
  }

  /** Starts a run it names itself, so a cut create can be sent again (the repeat answers with the same run). */
  async create(turn: RunSeen["turn"], body: Record<string, unknown>, policy: RunSeen["policy"]): Promise<RunSeen> {
    const runId = createId("run");
    const run: RunSeen = { runId, threadId: this.#options.threadId, turn, cycle: this.#options.cycle, policy, events: [], isStopAccepted: false, stopsSent: 0, isCut: false, isStreamGone: false };
    this.#options.record.runs.set(runId, run);
    // A create never answered may have landed or not: the checks after the fault find out.
    const reply = await this.send("POST", `/v1/threads/${this.#options.threadId}/runs`, { ...body, run_id: runId }, "create", run);
    if (reply.status !== 201 && reply.status !== 200) {
      this.#options.record.runs.delete(runId);
      this.#options.record.violation(`create on ${this.#options.threadId} answered ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`);
      throw new RequestCut("create refused");
    }
    if (reply.body.run_id !== runId) this.#options.record.violation(`create named ${runId}, the server answered ${reply.body.run_id}`);
    return run;
  }

  /** Stop; a cut one is sent again (with failover). The reply, or undefined when the run ended first. */
  async stop(run: RunSeen): Promise<Reply | undefined> {
    run.stopsSent++;
    const reply = await this.send("POST", `/v1/runs/${run.runId}/cancel`, { reason: "chaos" }, "stop", run, () => run.stopsSent++);
    if (reply.status === 202 && reply.body.already_terminal !== true) run.isStopAccepted = true;
    else if (reply.status !== 200) this.#options.record.violation(`${run.runId}: Stop answered ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply;
  }

  /** A JSON request; a cut one goes to the next API process (with failover) or ends the turn. */
  async send(method: string, path: string, body: unknown, what: string, run?: RunSeen, onRetry?: () => void): Promise<Reply> {
    const { record } = this.#options;
    for (let attempt = 1; ; attempt++) {
      try {
        const base = this.base;
        record.sending(what, base);
        const response = await fetch(`${base}${path}`, {
          method,
          headers: body === undefined ? {} : { "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        const reply = { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
        if (response.status < 500) return reply;
        if (!this.#options.isServerErrorExpected?.()) record.violation(`${method} ${path} answered ${response.status} ${text.slice(0, 300)}`);
        throw new RequestCut(`${what}: ${response.status}`);
      } catch (error) {
        if (run) run.isCut = true;
        record.cut(`${what}${error instanceof RequestCut ? " (5xx)" : ""}`);
        if (!this.#options.isFailover || attempt >= 6) throw error instanceof RequestCut ? error : new RequestCut(`${what}: ${String(error)}`);
        this.#api++;
        onRetry?.();
      }
    }
  }

  #isEnded(run: RunSeen): boolean {
    return run.events.some((event) => TERMINAL_EVENTS.has(event.type));
  }

  /**
   * Reads the run's events after the last one seen until `until` holds (then the connection is
   * dropped) or the run's terminal event. A cut stream is resumed (with failover) or ends the turn.
   */
  async read(run: RunSeen, until?: (event: RunEvent) => boolean): Promise<void> {
    for (let attempt = 1; !this.#isEnded(run); attempt++) {
      try {
        const outcome = await readRunOnce(this.base, run, this.#options.record, until, this.#options.readTimeoutMs);
        if (outcome !== "cut") return;
      } catch (error) {
        run.isCut = true;
        this.#options.record.cut("stream");
        if (!this.#options.isFailover || attempt >= 6) throw new RequestCut(`stream of ${run.runId}: ${String(error)}`);
        this.#api++;
      }
    }
  }
}

/**
 * One read of a run's events from `base`, after the last event the client saw (Last-Event-ID),
 * checking each event against what came before. "until" when `until` held, "ended" at the
 * terminal event, "gone" for a 410; throws when the connection failed.
 */
export async function readRunOnce(base: string, run: RunSeen, record: ChaosRecord, until?: (event: RunEvent) => boolean, timeoutMs = 60_000): Promise<"until" | "ended" | "gone" | "cut"> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("timed out")), timeoutMs);
  const lastSeq = run.events.at(-1)?.seq;
  try {
    const response = await fetch(`${base}/v1/runs/${run.runId}/events`, {
      headers: lastSeq === undefined ? {} : { "last-event-id": String(lastSeq) },
      signal: controller.signal,
    });
    if (response.status === 410) {
      await response.body?.cancel();
      run.isStreamGone = true;
      return "gone";
    }
    if (response.status !== 200) {
      const text = await response.text();
      if (response.status >= 500) throw new Error(`events answered ${response.status} ${text.slice(0, 200)}`);
      record.violation(`${run.runId}: events answered ${response.status} ${text.slice(0, 200)}`);
      return "ended";
    }
    for await (const message of readSseEvents(response.body!, { signal: controller.signal })) {
      const event = JSON.parse(message.data) as RunEvent;
      checkNext(run, event, record);
      run.events.push(event);
      record.seen(run, event);
      if (TERMINAL_EVENTS.has(event.type)) return "ended";
      if (until?.(event)) return "until";
    }
    if (controller.signal.aborted) {
      record.violation(`${run.runId}: its stream had no terminal event within ${timeoutMs} ms (last: ${JSON.stringify(run.events.at(-1))})`);
      return "ended";
    }
    // The server ended the response before the terminal event: what a dying process or a cut does.
    return "cut";
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** An event follows the ones the client saw: gapless within an attempt, a new attempt from its start, nothing after the end. */
function checkNext(run: RunSeen, event: RunEvent, record: ChaosRecord): void {
  const previous = run.events.at(-1);
  const where = `${run.runId} (${run.turn}, cycle ${run.cycle})`;
  if (previous && TERMINAL_EVENTS.has(previous.type)) record.violation(`${where}: ${event.type}@${event.seq} after the terminal ${previous.type}`);
  if (!previous) {
    if (event.seq !== 1 && !(event.type === "run.started" && (event.seq - 1) % ATTEMPT_STRIDE === 0)) record.violation(`${where}: the first event seen is ${event.type}@${event.seq}`);
  } else if (attemptOfSeq(event.seq) === attemptOfSeq(previous.seq)) {
    if (event.seq !== previous.seq + 1) record.violation(`${where}: seq ${event.seq} after ${previous.seq} (a gap or a repeat)`);
  } else if (attemptOfSeq(event.seq) < attemptOfSeq(previous.seq) || event.type !== "run.started" || (event.seq - 1) % ATTEMPT_STRIDE !== 0) {
    record.violation(`${where}: ${event.type}@${event.seq} after ${previous.type}@${previous.seq} (an attempt out of order)`);
  }
  const cancelRequested = run.events.findIndex((seen) => seen.type === "run.cancel_requested");
  if (cancelRequested >= 0 && ["message.delta", "message.published", "run.completed"].includes(event.type)) {
    record.violation(`${where}: ${event.type}@${event.seq} after run.cancel_requested@${run.events[cancelRequested]!.seq}`);
  }
}

/** A JSON call that must be answered (after a fault: the server is back). */
export async function askJson(base: string, path: string, body?: unknown): Promise<Reply> {
  const response = await fetch(`${base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

const TERMINAL_STATUS = new Set(["completed", "cancelled", "failed"]);

/**
 * After a fault, on a server that is back: every run ends (a run paused for an approval is
 * approved, as its user would), a stream a fault cut is read on (its rest, or 410: history is
 * the truth), each stream's end agrees with the run's status, an accepted Stop ended `cancelled`,
 * and every message seen published is in its thread's history. Returns the final statuses.
 */
export async function settleRuns(base: string, runs: readonly RunSeen[], record: ChaosRecord, timeoutMs = 45_000): Promise<Map<string, any>> {
  const finals = new Map<string, any>();
  await Promise.all(
    runs.map(async (run) => {
      const where = `${run.runId} (${run.turn}, cycle ${run.cycle}, ${run.policy})`;
      const found = await askJson(base, `/v1/runs/${run.runId}`);
      if (found.status === 404) {
        // A create the fault cut before it was stored: nothing of it may exist.
        if (run.events.length > 0) record.violation(`${where}: events were seen, but the run does not exist`);
        return;
      }
      // A run paused for an approval waits for its user: approved (again, if a decision was lost in the fault), it must end.
      const final = await eventually(
        async () => {
          const { body } = await askJson(base, `/v1/runs/${run.runId}`);
          if (body.status === "interrupted") await askJson(base, `/v1/runs/${run.runId}/approve`, {});
          if (!TERMINAL_STATUS.has(body.status)) throw new Error(`${where} is ${JSON.stringify(body)}`);
          return body;
        },
        { what: `${where} ending`, timeoutMs },
      ).catch((error: Error) => {
        record.violation(`stuck: ${error.message}`);
        return undefined;
      });
      if (!final) return;
      finals.set(run.runId, final);
      if (!run.events.some((event) => TERMINAL_EVENTS.has(event.type)) && !run.isStreamGone) {
        const outcome = await readRunOnce(base, run, record, undefined, timeoutMs).catch((error: unknown) => {
          record.violation(`${where}: reading its stream after the fault failed: ${String(error)}`);
          return "ended" as const;
        });
        if (outcome === "cut") record.violation(`${where}: its stream ended without a terminal event after the fault`);
      }
      const terminal = run.events.findLast((event) => TERMINAL_EVENTS.has(event.type));
      if (terminal && terminal.type !== `run.${final.status}`) record.violation(`${where}: the stream ended ${terminal.type}, the run is ${final.status}`);
      if (run.isStopAccepted && final.status !== "cancelled") record.violation(`${where}: a Stop was accepted, the run ended ${final.status} (${final.failure_reason})`);
      for (const type of ["run.cancel_requested", "run.cancelled"]) {
        const count = run.events.filter((event) => event.type === type).length;
        if (count > 1) record.violation(`${where}: ${count} ${type} events`);
      }
    }),
  );
  for (const threadId of new Set(runs.map((run) => run.threadId))) {
    const history = await askJson(base, `/v1/threads/${threadId}/history`);
    const kept = new Set(((history.body?.messages as { message_id: string }[] | undefined) ?? []).map((message) => message.message_id));
    for (const messageId of record.published.get(threadId) ?? []) {
      if (!kept.has(messageId)) record.violation(`${threadId}: ${messageId} was published on a stream but is not in history`);
    }
  }
  return finals;
}

/** Counts of final statuses (and failure reasons), for the report. */
export function statusCounts(finals: Iterable<any>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const final of finals) {
    const key = final.status === "failed" ? `failed:${final.failure_reason}` : String(final.status);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** Waits until every thread is idle, then sends one more turn on each: a run after the fault completes; confirms unknown email outcomes first. */
export async function followUps(base: string, threadIds: readonly string[], record: ChaosRecord, timeoutMs = 45_000): Promise<void> {
  await Promise.all(
    threadIds.map(async (threadId) => {
      await eventually(
        async () => {
          const thread = (await askJson(base, `/v1/threads/${threadId}`)).body;
          if (thread.status !== "idle") throw new Error(`thread ${threadId} is ${JSON.stringify(thread)}`);
        },
        { what: `thread ${threadId} becoming idle`, timeoutMs },
      );
      const next = await askJson(base, `/v1/threads/${threadId}/runs`, { input: { role: "user", content: "thanks, that is all" } });
      if (next.status !== 201) {
        record.violation(`follow-up on ${threadId}: ${next.status} ${JSON.stringify(next.body)}`);
        return;
      }
      const final = await eventually(
        async () => {
          const { body } = await askJson(base, `/v1/runs/${next.body.run_id}`);
          if (!TERMINAL_STATUS.has(body.status)) throw new Error(JSON.stringify(body));
          return body;
        },
        { what: `the follow-up on ${threadId} ending`, timeoutMs },
      );
      if (final.status !== "completed") record.violation(`follow-up on ${threadId} ended ${JSON.stringify(final)}`);
    }),
  );
}

/**
 * The external effects against the ledger: no idempotency key sent twice, and every operation
 * resolved, committed exactly when the outbox has its key. Returns counts for the report.
 */
export async function checkEffects(base: string, threadIds: readonly string[], outbox: Map<string, number>, record: ChaosRecord): Promise<{ operations: number; committed: number; sent: number }> {
  for (const [key, count] of outbox) if (count > 1) record.violation(`email ${key} sent ${count} times`);
  let operations = 0;
  let committed = 0;
  for (const threadId of threadIds) {
    for (const operation of (await askJson(base, `/v1/threads/${threadId}/operations`)).body.operations as any[]) {
      operations++;
      if (operation.phase === "committed") committed++;
      if (!["committed", "failed", "abandoned"].includes(operation.phase)) record.violation(`operation unresolved: ${JSON.stringify(operation)}`);
      if (operation.commit_attempts > 1) record.violation(`operation committed ${operation.commit_attempts} times: ${JSON.stringify(operation)}`);
      if (outbox.has(operation.idempotency_key) !== (operation.phase === "committed")) {
        record.violation(`operation ${operation.phase} but the outbox ${outbox.has(operation.idempotency_key) ? "has" : "lacks"} it: ${JSON.stringify(operation)}`);
      }
    }
  }
  return { operations, committed, sent: outbox.size };
}
