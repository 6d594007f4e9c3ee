/**
 * The soak's clients (issue 17, item 4): `users` loops against one server, each on its own
 * thread, for `durationMs`. Each turn draws what the user does: read the answer to its end, Stop
 * it after a few words, drop the connection and reconnect with Last-Event-ID, or Stop and then
 * Continue. Every turn is checked as it goes (the client's view of DESIGN §15): gapless events
 * without repeats across reconnects, nothing streamed after the accepted cancel, the last event
 * agreeing with the run's status, and every message seen published present in history.
 */
import { readSseEvents } from "../../src/stream/index.js";

/** What one user does with a turn. */
export type SoakAction = "complete" | "stop" | "disconnect" | "stop_continue";

export interface SoakOptions {
  /** The server's base URL. */
  url: string;
  users: number;
  durationMs: number;
  /** Seeds every user's choices (user `i` draws from `seed + i`). */
  seed: number;
  /** Called once a minute of the soak (from its start) has passed, and at the end. */
  onMinute?: (minute: number) => void;
}

export interface SoakReport {
  turns: Record<SoakAction, number>;
  /** Stop sent → `run.cancelled` read on the stream, ms, by the minute the Stop was sent in. */
  stopLatencyByMinute: number[][];
  /** What broke a checked property, with the run it happened on (none in a good soak). */
  violations: string[];
  /** Requests answered with a 5xx, or that failed at the transport (none in a good soak). */
  serverErrors: string[];
  /** Every run the soak started, to check afterwards that each one ended. */
  runIds: string[];
}

type Event = { type: string; seq: number } & Record<string, unknown>;

const TERMINAL: Record<string, string> = { "run.completed": "completed", "run.cancelled": "cancelled", "run.failed": "failed" };

/** A small seeded PRNG (mulberry32): the soak's choices replay from its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const report: SoakReport = {
    turns: { complete: 0, stop: 0, disconnect: 0, stop_continue: 0 },
    stopLatencyByMinute: [],
    violations: [],
    serverErrors: [],
    runIds: [],
  };
  const startedAt = performance.now();
  const endsAt = startedAt + options.durationMs;
  const minuteOf = (at: number) => Math.floor((at - startedAt) / 60_000);
  let minutesAnnounced = 0;
  const minuteTimer = setInterval(() => {
    const minute = minuteOf(performance.now());
    while (minutesAnnounced < minute) options.onMinute?.(++minutesAnnounced);
  }, 1_000);
  try {
    await Promise.all(Array.from({ length: options.users }, (_, index) => userLoop(options.url, random(options.seed + index), endsAt, report, minuteOf)));
  } finally {
    clearInterval(minuteTimer);
  }
  return report;
}

async function api(report: SoakReport, method: string, url: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    const response = await fetch(url, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as Record<string, unknown>;
    if (response.status >= 500) report.serverErrors.push(`${method} ${url} → ${response.status} ${JSON.stringify(json).slice(0, 200)}`);
    return { status: response.status, body: json };
  } catch (error) {
    report.serverErrors.push(`${method} ${url} failed: ${String(error)}`);
    return { status: 0, body: {} };
  }
}

/** One user: a thread, turns until the time is up. */
async function userLoop(url: string, draw: () => number, endsAt: number, report: SoakReport, minuteOf: (at: number) => number): Promise<void> {
  const thread = await api(report, "POST", `${url}/v1/threads`, {});
  const threadId = thread.body.thread_id as string | undefined;
  if (!threadId) return;
  const published = new Set<string>();
  while (performance.now() < endsAt) {
    const roll = draw();
    const action: SoakAction = roll < 0.4 ? "complete" : roll < 0.65 ? "stop" : roll < 0.85 ? "disconnect" : "stop_continue";
    const wordsBefore = 1 + Math.floor(draw() * 8);
    await turn(url, threadId, action, wordsBefore, report, minuteOf, published);
    report.turns[action]++;
  }
  // Every message a client saw published is in the thread's history.
  const history = await api(report, "GET", `${url}/v1/threads/${threadId}/history`);
  const kept = new Set(((history.body.messages as { message_id: string }[] | undefined) ?? []).map((message) => message.message_id));
  for (const messageId of published) if (!kept.has(messageId)) report.violations.push(`${threadId}: ${messageId} was published on the stream but is not in history`);
}

async function turn(
  url: string,
  threadId: string,
  action: SoakAction,
  wordsBefore: number,
  report: SoakReport,
  minuteOf: (at: number) => number,
  published: Set<string>,
): Promise<void> {
  const created = await api(report, "POST", `${url}/v1/threads/${threadId}/runs`, { input: { role: "user", content: `Soak turn: ${action}, please answer at length.` } });
  const runId = created.body.run_id as string | undefined;
  if (!runId) {
    report.violations.push(`${threadId}: a run could not start: ${created.status} ${JSON.stringify(created.body).slice(0, 200)}`);
    return;
  }
  report.runIds.push(runId);
  const stream = new StreamReader(url, runId, report, published);
  if (action === "complete") {
    await stream.read(() => false);
  } else if (action === "disconnect") {
    await stream.read((event) => event.type === "message.delta" && stream.deltas >= wordsBefore);
    // Dropped: the next read resumes after the last event seen.
    await stream.read(() => false);
  } else {
    await stream.read((event) => event.type === "message.delta" && stream.deltas >= wordsBefore, async () => {
      const sentAt = performance.now();
      const cancel = await api(report, "POST", `${url}/v1/runs/${runId}/cancel`, { reason: "soak" });
      stream.cancelSentAt = sentAt;
      stream.cancelAccepted = cancel.status === 202 && cancel.body.already_terminal !== true;
      stream.resumeCheckpointId = cancel.body.resume_checkpoint_id as string | undefined;
    });
    if (stream.cancelAccepted && stream.cancelledAt !== undefined) {
      const minute = minuteOf(stream.cancelSentAt!);
      (report.stopLatencyByMinute[minute] ??= []).push(stream.cancelledAt - stream.cancelSentAt!);
    }
    if (action === "stop_continue" && stream.cancelAccepted && stream.resumeCheckpointId) {
      const resumed = await api(report, "POST", `${url}/v1/threads/${threadId}/runs`, { resume_from_checkpoint_id: stream.resumeCheckpointId });
      const resumedId = resumed.body.run_id as string | undefined;
      if (!resumedId) {
        report.violations.push(`${runId}: Continue refused: ${resumed.status} ${JSON.stringify(resumed.body).slice(0, 200)}`);
        return;
      }
      report.runIds.push(resumedId);
      const continued = new StreamReader(url, resumedId, report, published);
      await continued.read(() => false);
      await continued.checkFinalStatus();
    }
  }
  await stream.checkFinalStatus();
}

/** One run's events as a client reads them, across reconnects, checking each as it comes. */
class StreamReader {
  deltas = 0;
  lastSeq = 0;
  terminal: string | undefined;
  cancelSentAt: number | undefined;
  cancelAccepted = false;
  cancelledAt: number | undefined;
  resumeCheckpointId: string | undefined;
  #isCancelRequested = false;

  constructor(
    readonly url: string,
    readonly runId: string,
    readonly report: SoakReport,
    readonly published: Set<string>,
  ) {}

  /**
   * Reads from after the last event seen until the run's end, or until `until` holds for an
   * event: then `action` (if any) runs and reading goes on to the end, else the connection is dropped.
   */
  async read(until: (event: Event) => boolean, action?: () => Promise<void>): Promise<void> {
    if (this.terminal) return;
    const controller = new AbortController();
    let response: Response;
    try {
      response = await fetch(`${this.url}/v1/runs/${this.runId}/events`, {
        headers: { accept: "text/event-stream", "last-event-id": String(this.lastSeq) },
        signal: controller.signal,
      });
    } catch (error) {
      this.report.serverErrors.push(`${this.runId}: events failed: ${String(error)}`);
      return;
    }
    if (response.status !== 200) {
      this.report.violations.push(`${this.runId}: events answered ${response.status} after seq ${this.lastSeq}`);
      await response.body?.cancel();
      return;
    }
    let hasActed = false;
    try {
      for await (const message of readSseEvents(response.body!, { signal: controller.signal })) {
        const event = JSON.parse(message.data) as Event;
        this.#check(event);
        if (!hasActed && until(event)) {
          if (!action) {
            controller.abort();
            break;
          }
          hasActed = true;
          await action();
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) this.report.serverErrors.push(`${this.runId}: stream broke: ${String(error)}`);
    }
  }

  #check(event: Event): void {
    if (event.seq !== this.lastSeq + 1) this.report.violations.push(`${this.runId}: seq ${event.seq} after ${this.lastSeq} (a gap or a repeat)`);
    this.lastSeq = Math.max(this.lastSeq, event.seq);
    if (event.type === "run.cancel_requested") this.#isCancelRequested = true;
    if (event.type === "message.delta") {
      this.deltas++;
      if (this.#isCancelRequested) this.report.violations.push(`${this.runId}: a delta after the accepted cancel (seq ${event.seq})`);
    }
    if (event.type === "message.published") {
      if (this.#isCancelRequested) this.report.violations.push(`${this.runId}: a publication after the accepted cancel (seq ${event.seq})`);
      this.published.add(event.message_id as string);
    }
    if (TERMINAL[event.type]) {
      this.terminal = event.type;
      if (event.type === "run.cancelled") this.cancelledAt = performance.now();
    }
  }

  /** The stream's last event agrees with the run's status; an accepted cancel ended it cancelled. */
  async checkFinalStatus(): Promise<void> {
    if (!this.terminal) {
      this.report.violations.push(`${this.runId}: its stream ended without a terminal event (after seq ${this.lastSeq})`);
      return;
    }
    const run = await api(this.report, "GET", `${this.url}/v1/runs/${this.runId}`);
    if (run.body.status !== TERMINAL[this.terminal]) this.report.violations.push(`${this.runId}: stream ended ${this.terminal}, the run is ${String(run.body.status)}`);
    if (this.cancelAccepted && this.terminal !== "run.cancelled") this.report.violations.push(`${this.runId}: cancel accepted, but the run ended ${this.terminal}`);
  }
}

/** Runs of `runIds` that are not terminal (the soak is over: none should be). */
export async function unfinishedRuns(url: string, runIds: readonly string[]): Promise<string[]> {
  const unfinished: string[] = [];
  for (const runId of runIds) {
    const response = await fetch(`${url}/v1/runs/${runId}`);
    const run = (await response.json()) as { status?: string };
    if (!["completed", "cancelled", "failed"].includes(run.status ?? "")) unfinished.push(`${runId} (${run.status})`);
  }
  return unfinished;
}
