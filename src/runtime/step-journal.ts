import { TERMINAL_STEP_STATUSES, type Clock, type RunEventDraft, type RunRecord, type StepStatus } from "../core/index.js";
import { runLogFields, type Logger } from "../core/logger.js";
import type { StepUpdate, Store } from "../store/index.js";

/** What the journal knows of a step besides its status (declared when the step is registered). */
export interface StepFacts {
  stepId: string;
  parentStepId: string | null;
  title: string | null;
  dependsOn: string[];
  inputHash: string | null;
}

/** A step's durable record, once its own work was checkpointed (or carried over by a Continue). */
export interface StepRecordRef {
  checkpointId: string;
  messageId: string | null;
  result: string | null;
  reusedFromRunId: string | null;
}

interface JournalEntry {
  facts: StepFacts;
  ordinal: number;
  status: StepStatus;
  startedAt: number | null;
  endedAt: number | null;
  error: string | null;
  record: StepRecordRef | null;
  /** The run's end wrote this step's row closed: its own end needs no row of the journal's. */
  isClosedByRunEnd: boolean;
}

/** What the journal writes through. */
export interface StepJournalContext {
  /** The run as last claimed. */
  run(): RunRecord;
  store: Store;
  clock: Clock;
  logger: Logger;
  emit(draft: RunEventDraft): void;
  /** Whether a Stop is ending the run: its rows then wait to be written with the run's end (`takeUnwritten`). */
  isEnding(): boolean;
}

/**
 * A run's steps as the plan executor moves them: each change is an event (`step.updated`) at once,
 * and a bookkeeping row written behind it, in order, coalesced while a write is in flight (a Stop
 * that cancels forty steps is one transaction). A step's completion is made durable by its own
 * checkpoint, never by this journal; `flush` waits until the rows say what the events said.
 */
export class StepJournal {
  readonly #entries = new Map<string, JournalEntry>();
  readonly #dirty = new Set<string>();
  readonly #context: StepJournalContext;
  #writing: Promise<void> | undefined;
  #isWriteQueued = false;

  constructor(context: StepJournalContext) {
    this.#context = context;
  }

  /** Declares a step before the executor registers it. */
  declare(facts: StepFacts): void {
    if (this.#entries.has(facts.stepId)) return;
    this.#entries.set(facts.stepId, {
      facts,
      ordinal: this.#entries.size,
      status: "not_started",
      startedAt: null,
      endedAt: null,
      error: null,
      record: null,
      isClosedByRunEnd: false,
    });
  }

  /**
   * Notes a step's durable record (its checkpoint), so its row and event name it; `endedRun` when
   * it was written with the run's end, which closed the step's row (and every other) in the same transaction.
   */
  recorded(stepId: string, record: StepRecordRef, endedRun = false): void {
    const entry = this.#entries.get(stepId);
    if (!entry) return;
    entry.record = record;
    entry.isClosedByRunEnd = endedRun;
  }

  /** The executor moved a step (or registered it, as `not_started`). */
  update(stepId: string, status: StepStatus, error?: unknown): void {
    const entry = this.#entries.get(stepId);
    if (!entry) return;
    const isRegistration = status === "not_started";
    if (!isRegistration && entry.status === status) return;
    const now = this.#context.clock.now();
    entry.status = status;
    if (status === "in_progress") entry.startedAt = now;
    const hasEnded = TERMINAL_STEP_STATUSES.includes(status);
    if (hasEnded) entry.endedAt = now;
    if (error !== undefined && status !== "completed") entry.error = describeStepError(error);
    const run = this.#context.run();
    this.#context.emit({
      type: "step.updated",
      run_id: run.runId,
      step_id: stepId,
      status,
      depends_on: entry.facts.dependsOn,
      title: entry.facts.title,
      parent_step_id: entry.facts.parentStepId,
      checkpoint_id: status === "completed" ? (entry.record?.checkpointId ?? null) : null,
      reused: entry.record?.reusedFromRunId != null,
    });
    // Rows are sticky once closed: the run's end already wrote what this one would.
    if (entry.isClosedByRunEnd && hasEnded) return;
    this.#dirty.add(stepId);
    // A registration waits for the end of its turn: the plan starts a ready step right after
    // registering it, and that start's write takes both rows (one transaction, not two).
    if (isRegistration) this.#writeSoon();
    else if (!this.#context.isEnding()) this.#write();
  }

  /** The steps still in progress, in registration order (what a Stop waits for). */
  inProgress(): string[] {
    return [...this.#entries.values()].filter((entry) => entry.status === "in_progress").map((entry) => entry.facts.stepId);
  }

  /** Resolves once every change so far is written, held ones too (failures are logged, never thrown). */
  async flush(): Promise<void> {
    await this.#writesLanded();
    this.#write(true);
    await this.#writesLanded();
  }

  /** Resolves once no write is in flight. */
  async #writesLanded(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  /**
   * The rows not written yet, for the run's end to write in its own transaction (a Stop's cut
   * steps: one transaction fewer before `run.cancelled`); a write in flight lands first.
   */
  async takeUnwritten(): Promise<StepUpdate[]> {
    await this.#writesLanded();
    const rows = [...this.#dirty].map((stepId) => this.#rowOf(this.#entries.get(stepId)!));
    this.#dirty.clear();
    return rows;
  }

  /** Rows taken by {@link takeUnwritten} that the run's end did not write after all: written later, as they now stand. */
  returnUnwritten(rows: readonly StepUpdate[]): void {
    for (const row of rows) this.#dirty.add(row.stepId);
  }

  /** Writes the changed rows once the current turn is over, unless a write has taken them by then. */
  #writeSoon(): void {
    if (this.#isWriteQueued) return;
    this.#isWriteQueued = true;
    queueMicrotask(() => {
      this.#isWriteQueued = false;
      if (!this.#context.isEnding()) this.#write();
    });
  }

  /** Writes the changed rows, one transaction at a time, until none is left (or, unless `isForced`, a Stop holds them). */
  #write(isForced = false): void {
    if (this.#writing || this.#dirty.size === 0) return;
    this.#writing = (async () => {
      while (this.#dirty.size > 0 && (isForced || !this.#context.isEnding())) {
        const steps = [...this.#dirty].map((stepId) => this.#rowOf(this.#entries.get(stepId)!));
        this.#dirty.clear();
        const run = this.#context.run();
        try {
          await this.#context.store.saveSteps({ tenantId: run.tenantId, runId: run.runId, steps });
        } catch (error) {
          // Bookkeeping only: the step's durable record is its checkpoint, and the run's end closes every row.
          this.#context.logger.warn({ ...runLogFields(run), error: String(error) }, "step rows not written");
        }
      }
    })().finally(() => {
      this.#writing = undefined;
    });
  }

  #rowOf(entry: JournalEntry): StepUpdate {
    return {
      stepId: entry.facts.stepId,
      status: entry.status,
      ordinal: entry.ordinal,
      parentStepId: entry.facts.parentStepId,
      title: entry.facts.title,
      dependsOn: entry.facts.dependsOn,
      inputHash: entry.facts.inputHash,
      startedAt: entry.startedAt,
      endedAt: entry.endedAt,
      error: entry.error,
      ...(entry.record
        ? {
            checkpointId: entry.record.checkpointId,
            messageId: entry.record.messageId,
            result: entry.record.result,
            reusedFromRunId: entry.record.reusedFromRunId,
          }
        : {}),
    };
  }
}

/** A short, safe reason for a step that did not complete. */
function describeStepError(error: unknown): string {
  if (error instanceof Error) return (error.name === "AbortError" ? "stopped" : `${error.name}: ${error.message}`).slice(0, 300);
  return typeof error === "string" ? error.slice(0, 300) : "stopped";
}
