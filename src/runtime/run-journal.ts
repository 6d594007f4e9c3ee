import { createId, isTerminalStatus, redactValue, type Clock, type Redactor, type RunEventDraft, type RunRecord } from "../core/index.js";
import { abortableDelay } from "../core/abortable-delay.js";
import { runLogFields, type Logger } from "../core/logger.js";
import type { Store } from "../store/index.js";
import type { EventHub, RunEventBuffer } from "../stream/index.js";
import { runInBackground } from "./background.js";
import type { Cluster } from "./cluster.js";
import { createRunEmitter } from "./run-emitter.js";
import { traceFor } from "./run-execution.js";

/** What the journal needs. */
export interface RunJournalPorts {
  hub: EventHub;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** What every trace entry's data passes through before it is stored. */
  redactor: Redactor;
  /** The other processes, whose runs' events come from the shared log. */
  cluster: Cluster | undefined;
  /** Whether this process executes the run (then its own buffer is the stream). */
  executesHere(tenantId: string, runId: string): boolean;
}

/**
 * What a run leaves behind as it goes: its event stream (written here, or followed from the
 * shared log when another process executes it) and its trace.
 */
export class RunJournal {
  readonly #ports: RunJournalPorts;

  constructor(ports: RunJournalPorts) {
    this.#ports = ports;
  }

  /** Appends to the run's stream; the first event of every attempt is `run.started`. */
  emitter(run: RunRecord): (draft: RunEventDraft) => void {
    const { hub, cluster } = this.#ports;
    return createRunEmitter(hub, run, cluster ? (event) => cluster.publishEvent(run.tenantId, event) : undefined);
  }

  /** The emitter of a run another process was executing: its attempt's stream continues from the shared log. */
  async continuingEmitter(run: RunRecord): Promise<(draft: RunEventDraft) => void> {
    const { hub, cluster } = this.#ports;
    if (cluster && !this.#ports.executesHere(run.tenantId, run.runId)) {
      await cluster.follow(hub, run.tenantId, run.runId, run.attempt);
      cluster.unfollow(run.tenantId, run.runId);
    }
    return this.emitter(run);
  }

  /** Records a trace entry in the background: the one way a trace is written, so the one place its data is redacted. */
  trace(run: RunRecord, kind: string, data: Record<string, unknown>): void {
    const { store, clock, logger, redactor } = this.#ports;
    const record = traceFor(run, createId("trc"), kind, redactValue(redactor, data), clock.now());
    runInBackground(logger, "trace", () => store.appendTrace(record), { ...runLogFields(run), kind });
  }

  /**
   * The buffer to stream a run's events from: this process's own when it executes the run, else
   * (scaled) the shared log's, followed live. Undefined when the stream is gone.
   */
  async openEvents(tenantId: string, run: RunRecord, afterSeq: number): Promise<RunEventBuffer | undefined> {
    const { hub, cluster } = this.#ports;
    const local = hub.get(tenantId, run.runId);
    if (!cluster || this.#ports.executesHere(tenantId, run.runId)) return local;
    const buffer = await cluster.follow(hub, tenantId, run.runId, run.attempt, afterSeq);
    if (isTerminalStatus(run.status) && !buffer.terminalEvent) {
      // The terminal event may be a moment behind the status; if it never comes, the log is gone.
      const waiter = new AbortController();
      await Promise.race([buffer.whenTerminal(), abortableDelay(2_000, waiter.signal)]).finally(() => waiter.abort());
      if (!buffer.terminalEvent) return undefined;
    }
    return buffer;
  }

  /** The run once it is terminal, or as it stands when `timeoutMs` ran out; undefined if unknown. */
  async waitForTerminal(tenantId: string, runId: string, timeoutMs: number): Promise<RunRecord | undefined> {
    const { hub, store, clock } = this.#ports;
    const deadline = clock.now() + timeoutMs;
    let run = await store.getRun(tenantId, runId);
    while (run && !isTerminalStatus(run.status)) {
      const remaining = deadline - clock.now();
      if (remaining <= 0) break;
      const buffer = hub.get(tenantId, runId);
      const waiter = new AbortController();
      const waits: Promise<unknown>[] = [abortableDelay(buffer ? remaining : Math.min(remaining, 50), waiter.signal)];
      if (buffer) waits.push(buffer.whenTerminal());
      await Promise.race(waits).finally(() => waiter.abort());
      run = await store.getRun(tenantId, runId);
    }
    return run;
  }
}
