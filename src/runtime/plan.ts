/**
 * The plan executor (DESIGN §11): steps with dependencies, run under a concurrency limit, each in
 * its own child scope of the run's `CancelScope`.
 *
 * A step starts once every dependency is `completed`; the run's signal is checked before each start
 * (a safe point), so nothing new starts after a cancel. A running step may add steps (the chat
 * loop: a model step adds its tool calls and the next model step, which depends on them); once its
 * own `run()` has finished it stays `children_in_progress` until they have. A cancel or a failure
 * cancels every running step at once, marks every step not yet started `cancelled`, and the plan
 * settles only after the started steps have: it never reports `cancelled` while work still runs.
 *
 * @example
 * const result = await runPlan(
 *   [
 *     { id: "search", run: ({ signal }) => search(query, { signal }) },
 *     { id: "answer", dependsOn: ["search"], run: ({ signal, result }) => answer(result("search"), { signal }) },
 *   ],
 *   { scope: run.scope, concurrency: 2 },
 * );
 */
import type { CancelScope } from "./cancel-scope.js";
import type { StepStatus } from "../core/records.js";
import { InvariantError } from "../core/errors/invariant-error.js";
import { PlanDefinitionError } from "./plan-definition-error.js";

/** Where a step is in its life; `completed`, `failed` and `cancelled` are terminal (sticky). */
export type { StepStatus } from "../core/records.js";

/** What a running step receives. */
export interface StepContext {
  readonly signal: AbortSignal;
  readonly scope: CancelScope;
  /** The result of a `completed` step (typically a dependency); throws for any other. */
  result(stepId: string): unknown;
  /** Adds a step that belongs to this one; allowed only while this step's `run()` is unsettled. */
  addStep(step: StepDefinition): void;
}

/** One unit of work in a plan. */
export interface StepDefinition {
  readonly id: string;
  readonly dependsOn?: readonly string[];
  run(context: StepContext): Promise<unknown>;
}

/** A step's observable state. */
export interface StepState {
  readonly id: string;
  status: StepStatus;
  result?: unknown;
  error?: unknown;
}

/** How to run a plan. */
export interface PlanOptions {
  readonly scope: CancelScope;
  /** How many step `run()`s may be in flight at once (default 4). */
  readonly concurrency?: number;
  /** Called with a snapshot of the step on registration and on every status change. */
  onStepStatus?(step: StepState): void;
}

/** How a plan ended, once every started step has settled. */
export interface PlanResult {
  status: "completed" | "failed" | "cancelled";
  steps: ReadonlyMap<string, StepState>;
  error?: unknown;
}

// All step transitions in one place; terminal statuses allow none.
const TRANSITIONS: Readonly<Record<StepStatus, readonly StepStatus[]>> = {
  not_started: ["in_progress", "cancelled"],
  in_progress: ["children_in_progress", "completed", "failed", "cancelled"],
  children_in_progress: ["completed", "failed", "cancelled"],
  completed: [],
  failed: [],
  cancelled: [],
};

type TerminalStepStatus = "completed" | "failed" | "cancelled";

interface StepEntry {
  readonly definition: StepDefinition;
  readonly state: StepState;
  readonly parent: StepEntry | undefined;
  readonly children: StepEntry[];
  dependencies: readonly StepEntry[];
  scope?: CancelScope;
  isRunSettled: boolean;
}

interface Halt {
  readonly status: "failed" | "cancelled";
  readonly error: unknown;
}

/** Runs `steps` (and the steps they add) to the end; rejects at once on an invalid plan. */
export async function runPlan(steps: readonly StepDefinition[], options: PlanOptions): Promise<PlanResult> {
  return await new PlanExecution(steps, options).run();
}

function isTerminal(status: StepStatus): status is TerminalStepStatus {
  return TRANSITIONS[status].length === 0;
}

class PlanExecution {
  readonly #entries = new Map<string, StepEntry>();
  readonly #options: PlanOptions;
  readonly #concurrency: number;
  #inFlight = 0;
  #halt: Halt | undefined;
  #isScheduling = false;
  #isRescheduleNeeded = false;
  #finish: ((result: PlanResult) => void) | undefined;
  #fail: ((error: unknown) => void) | undefined;

  constructor(steps: readonly StepDefinition[], options: PlanOptions) {
    const concurrency = options.concurrency ?? 4;
    if (!(concurrency >= 1) || !(Number.isInteger(concurrency) || concurrency === Infinity)) {
      throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`);
    }
    this.#options = options;
    this.#concurrency = concurrency;
    // Register every id first so that dependencies may name a step listed later.
    const entries = steps.map((definition) => this.#register(definition, undefined, []));
    for (const entry of entries) entry.dependencies = this.#resolveDependencies(entry.definition);
    for (const entry of entries) {
      if (this.#waitsOn(entry.dependencies, entry)) throw new PlanDefinitionError(entry.state.id, `step "${entry.state.id}" depends on itself`);
    }
  }

  run(): Promise<PlanResult> {
    const { signal } = this.#options.scope;
    const onAbort = (): void => {
      try {
        this.#stop({ status: "cancelled", error: signal.reason });
        this.#schedule();
      } catch (error) {
        this.#fail?.(error);
      }
    };
    return new Promise<PlanResult>((resolve, reject) => {
      this.#finish = resolve;
      this.#fail = reject;
      for (const entry of this.#entries.values()) this.#report(entry);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#schedule();
    }).finally(() => signal.removeEventListener("abort", onAbort));
  }

  #register(definition: StepDefinition, parent: StepEntry | undefined, dependencies: readonly StepEntry[]): StepEntry {
    if (this.#entries.has(definition.id)) throw new PlanDefinitionError(definition.id, `duplicate step id "${definition.id}"`);
    const state: StepState = { id: definition.id, status: "not_started" };
    const entry: StepEntry = { definition, state, parent, children: [], dependencies, isRunSettled: false };
    this.#entries.set(definition.id, entry);
    parent?.children.push(entry);
    return entry;
  }

  #resolveDependencies(definition: StepDefinition): StepEntry[] {
    return (definition.dependsOn ?? []).map((id) => {
      const dependency = this.#entries.get(id);
      if (dependency === undefined) throw new PlanDefinitionError(definition.id, `step "${definition.id}" depends on unknown step "${id}"`);
      return dependency;
    });
  }

  /** Whether anything in `from` waits (through dependencies or children) for `target` to finish. */
  #waitsOn(from: readonly StepEntry[], target: StepEntry): boolean {
    const seen = new Set<StepEntry>();
    const pending = [...from];
    for (let entry = pending.pop(); entry !== undefined; entry = pending.pop()) {
      if (entry === target) return true;
      if (seen.has(entry) || isTerminal(entry.state.status)) continue;
      seen.add(entry);
      pending.push(...entry.dependencies, ...entry.children);
    }
    return false;
  }

  #addStep(definition: StepDefinition, owner: StepEntry): void {
    if (owner.isRunSettled) throw new PlanDefinitionError(definition.id, `step "${owner.state.id}" cannot add "${definition.id}" after its run() settled`);
    const dependencies = this.#resolveDependencies(definition);
    // The owner completes only after its children, so a child that waits for it would wait forever.
    if (this.#waitsOn(dependencies, owner)) {
      throw new PlanDefinitionError(definition.id, `step "${definition.id}" would wait for its own parent "${owner.state.id}"`);
    }
    const entry = this.#register(definition, owner, dependencies);
    this.#report(entry);
    // Nothing new is scheduled once the plan halts: a step added meanwhile never starts.
    if (this.#halt !== undefined) this.#end(entry, "cancelled");
    this.#schedule();
  }

  #schedule(): void {
    // A step's run() may call addStep or cancel synchronously: let the outer loop pick that up.
    if (this.#isScheduling) {
      this.#isRescheduleNeeded = true;
      return;
    }
    this.#isScheduling = true;
    try {
      do {
        this.#isRescheduleNeeded = false;
        this.#startReadySteps();
      } while (this.#isRescheduleNeeded);
    } finally {
      this.#isScheduling = false;
    }
    this.#finishIfIdle();
  }

  #startReadySteps(): void {
    for (const entry of this.#entries.values()) {
      if (this.#halt !== undefined || this.#inFlight >= this.#concurrency) return;
      if (entry.state.status !== "not_started") continue;
      if (!entry.dependencies.every((dependency) => dependency.state.status === "completed")) continue;
      // The safe point: a scope cancelled before the plan began (or between steps) starts nothing.
      const { signal } = this.#options.scope;
      if (signal.aborted) {
        this.#stop({ status: "cancelled", error: signal.reason });
        return;
      }
      this.#start(entry);
    }
  }

  #start(entry: StepEntry): void {
    const scope = this.#options.scope.child();
    entry.scope = scope;
    this.#inFlight += 1;
    this.#transition(entry, "in_progress");
    const context: StepContext = {
      signal: scope.signal,
      scope,
      result: (stepId) => this.#resultOf(stepId),
      addStep: (step) => this.#addStep(step, entry),
    };
    // The executor turns a synchronous throw from run() into a rejection.
    new Promise<unknown>((resolve) => resolve(entry.definition.run(context)))
      .then(
        (value) => this.#onRunSettled(entry, () => {
          entry.state.result = value;
          const hasUnfinishedChildren = entry.children.some((child) => !isTerminal(child.state.status));
          if (hasUnfinishedChildren) this.#transition(entry, "children_in_progress");
          else this.#endWithChildren(entry);
        }),
        (error: unknown) => this.#onRunSettled(entry, () => {
          entry.state.error = error;
          // A rejection after its scope was asked to stop is the cancel taking effect, not a failure.
          this.#end(entry, scope.isCancelRequested ? "cancelled" : "failed");
        }),
      )
      // Only a broken invariant or a throwing onStepStatus lands here: reject the plan, never hang.
      .catch((error: unknown) => this.#fail?.(error));
  }

  #onRunSettled(entry: StepEntry, record: () => void): void {
    this.#inFlight -= 1;
    entry.isRunSettled = true;
    record();
    entry.scope?.dispose();
    this.#schedule();
  }

  #resultOf(stepId: string): unknown {
    const entry = this.#entries.get(stepId);
    if (entry?.state.status !== "completed") {
      throw new PlanDefinitionError(stepId, `step "${stepId}" has no result (${entry === undefined ? "unknown step" : entry.state.status})`);
    }
    return entry.state.result;
  }

  /** Ends a step whose run() resolved: completed, unless one of its children failed or was cancelled. */
  #endWithChildren(entry: StepEntry): void {
    const unsuccessful =
      entry.children.find((child) => child.state.status === "failed") ??
      entry.children.find((child) => child.state.status === "cancelled");
    if (unsuccessful === undefined) {
      this.#end(entry, "completed");
      return;
    }
    entry.state.error = unsuccessful.state.error;
    this.#end(entry, unsuccessful.state.status === "failed" ? "failed" : "cancelled");
  }

  #end(entry: StepEntry, status: TerminalStepStatus): void {
    this.#transition(entry, status);
    if (status !== "completed") this.#stop({ status, error: entry.state.error });
    const parent = entry.parent;
    if (parent?.state.status === "children_in_progress" && parent.children.every((child) => isTerminal(child.state.status))) {
      this.#endWithChildren(parent);
    }
  }

  /** Halts the plan: every running step hears the cancel at once, every unstarted one is cancelled. */
  #stop(halt: Halt): void {
    if (this.#halt !== undefined) return;
    this.#halt = halt;
    const reason = halt.status === "cancelled" ? halt.error : abortError("a step of the plan failed", halt.error);
    // Cancel all first, await none: each provider or tool hears its cancel in parallel.
    for (const entry of this.#entries.values()) {
      if (entry.state.status === "in_progress") entry.scope?.cancel(reason);
    }
    for (const entry of this.#entries.values()) {
      if (entry.state.status === "not_started") this.#end(entry, "cancelled");
    }
  }

  #finishIfIdle(): void {
    if (this.#inFlight > 0 || this.#finish === undefined) return;
    const finish = this.#finish;
    this.#finish = undefined;
    const unfinished = [...this.#entries.values()].filter((entry) => !isTerminal(entry.state.status));
    // Unreachable while the checks in the constructor and addStep hold; never hang if one is missing.
    if (unfinished.length > 0) {
      this.#fail?.(new InvariantError(`plan is stuck: ${unfinished.map((entry) => entry.state.id).join(", ")} cannot finish`));
      return;
    }
    const steps = new Map<string, StepState>();
    for (const [id, entry] of this.#entries) steps.set(id, entry.state);
    finish(this.#halt === undefined ? { status: "completed", steps } : { status: this.#halt.status, steps, error: this.#halt.error });
  }

  #transition(entry: StepEntry, to: StepStatus): void {
    const from = entry.state.status;
    if (!TRANSITIONS[from].includes(to)) throw new InvariantError(`step "${entry.state.id}" cannot go from ${from} to ${to}`);
    entry.state.status = to;
    this.#report(entry);
  }

  #report(entry: StepEntry): void {
    this.#options.onStepStatus?.({ ...entry.state });
  }
}

function abortError(message: string, cause: unknown): Error {
  const error = new Error(message, { cause });
  error.name = "AbortError";
  return error;
}
