/**
 * Shared fixtures of the conformance suite: a fresh store per test from the adapter under test,
 * a clock, and the few steps most tests start from (a thread, a run, a claimed run).
 */
import { afterEach, beforeEach, expect } from "vitest";
import { checkStore } from "../../src/check/index.js";
import { createId, type RunRecord, type ThreadRecord } from "../../src/core/index.js";
import type { CreateRunInput, PublishMessageInput, Store } from "../../src/store/store.js";
import type { StoreAdapter } from "./adapters.js";

export const TENANT = "tenant_a";
export const OTHER_TENANT = "tenant_b";
export const T0 = 1_700_000_000_000;

/** Narrows a result to one kind, failing the test on any other. */
export function expectKind<T extends { kind: string }, K extends T["kind"]>(result: T, kind: K): Extract<T, { kind: K }> {
  expect(result.kind).toBe(kind);
  return result as Extract<T, { kind: K }>;
}

/** What {@link StoreFixture.runningRun} makes: options default to a new thread of {@link TENANT}. */
export interface RunningRunOptions {
  tenantId?: string;
  /** Reuse a thread instead of creating one. */
  threadId?: string;
  owner?: string;
}

/**
 * One test's store and clock. A test file makes one fixture at module level and calls
 * {@link StoreFixture.use} in each `describe.each(adapters)`; `store` is a stable handle that
 * forwards to the current test's store, so helpers written once see each test's fresh store.
 */
export class StoreFixture {
  now = T0;
  #current: Store | undefined;

  readonly store: Store = new Proxy({} as Store, {
    get: (_target, property) => {
      const current = this.#current;
      if (!current) throw new Error("The conformance store is used outside a test.");
      const value: unknown = Reflect.get(current, property, current);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(current) : value;
    },
  });

  /** Opens a new store of `adapter` before, and closes it after, each test of the enclosing describe. */
  use(adapter: StoreAdapter): void {
    beforeEach(async () => {
      this.#current = await adapter.create();
      this.now = T0;
    });
    afterEach(async () => {
      const current = this.#current;
      this.#current = undefined;
      await current?.close();
    });
  }

  /** The current test's store itself (e.g. for the adapter's `countRows`). */
  get current(): Store {
    if (!this.#current) throw new Error("No store is open.");
    return this.#current;
  }

  /** Moves the clock one second on and returns it. */
  tick = (): number => (this.now += 1_000);

  newThread = async (tenantId = TENANT, threadId = createId("thr")): Promise<ThreadRecord> =>
    this.store.createThread({ tenantId, threadId, checkpointId: createId("cp"), metadata: { topic: "test" }, now: this.tick() });

  runInput = (threadId: string, overrides: Partial<CreateRunInput> = {}): CreateRunInput => ({
    tenantId: TENANT,
    runId: createId("run"),
    threadId,
    input: { role: "user", content: "hello" },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: "hash-hello",
    model: "demo",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    now: this.tick(),
    ...overrides,
  });

  /** A run created on `threadId` (queued, the thread's active run). */
  newRun = async (threadId: string, overrides: Partial<CreateRunInput> = {}): Promise<RunRecord> =>
    expectKind(await this.store.createRun(this.runInput(threadId, overrides)), "created").run;

  /** A claimed (running) run, on a new thread unless one is named; its lease lasts 30 s. */
  runningRun = async (options: RunningRunOptions = {}): Promise<RunRecord> => {
    const { tenantId = TENANT, owner = "worker-1" } = options;
    const threadId = options.threadId ?? (await this.newThread(tenantId)).threadId;
    const run = await this.newRun(threadId, { tenantId });
    const claimed = await this.store.claimRun({ tenantId, runId: run.runId, owner, leaseExpiresAt: this.now + 30_000, now: this.tick() });
    expect(claimed?.status).toBe("running");
    return claimed!;
  };

  publishInput = (run: RunRecord, overrides: Partial<PublishMessageInput> = {}): PublishMessageInput => ({
    tenantId: run.tenantId,
    runId: run.runId,
    messageId: createId("msg"),
    checkpointId: createId("cp"),
    role: "assistant",
    content: "an answer",
    completedStepId: "step-1",
    stats: {},
    complete: false,
    now: this.tick(),
    ...overrides,
  });

  /** TERMINATE in the store; true when the thread was there to delete. */
  deleteThread = async (tenantId: string, threadId: string): Promise<boolean> =>
    (await this.store.deleteThread({ tenantId, threadId, reason: "thread_terminated", createCheckpointId: () => createId("cp"), now: this.tick() })).kind ===
    "deleted";

  cancel = (run: RunRecord, reason = "user_stop") =>
    this.store.requestCancel({
      tenantId: run.tenantId,
      runId: run.runId,
      reason,
      checkpointId: createId("cp"),
      pendingStep: { stepId: "step-1", kind: "model", inputHash: "h1" },
      now: this.tick(),
    });

  /** Everything a write could change about a thread, to prove a refused write changed nothing. */
  snapshot = async (tenantId: string, threadId: string, runId: string) => ({
    thread: await this.store.getThread(tenantId, threadId),
    messages: await this.store.listMessages(tenantId, threadId),
    checkpoints: await this.store.listCheckpoints(tenantId, threadId),
    run: await this.store.getRun(tenantId, runId),
  });

  /** `tidemark check` finds nothing wrong in the whole store. */
  expectClean = async (): Promise<void> => {
    expect((await checkStore(this.store)).violations).toEqual([]);
  };
}
