/**
 * The two-launch race the history checker found on PostgreSQL (docs/reliability.md, "History
 * checking"), replayed exactly. In a process that is both API and worker, a run's create launches
 * it (claiming it first) while the worker's batch claim can take it too: one execution wins the
 * claim, the other ends. A Stop accepted meanwhile must stop the winner, wherever it landed.
 *
 * Each window is driven to its interleaving by gates on the real store, never by timing: the
 * create's launch claims only when the test says; the batch claim, once it took the run, returns
 * (and so registers its execution) only when the test says; and in the second window the Stop's
 * record waits at the store. The model holds its answer until released, so the Stop is always
 * accepted before the first word: the run must end `cancelled` with no delta, no publication, and
 * its model request closed.
 *
 * - Window 1 (`takeUpAcceptedCancel` in launch-run.ts): the Stop is recorded before the batch
 *   claim's execution is registered, having reached the create's launch (still claiming), or no
 *   execution at all (its notice to the worker finds none either).
 * - Window 2 (`cancel-run.ts`, "Two launches of one run can meet"): the batch claim's execution is
 *   registered, and reads no cancel, while the Stop that reached the create's launch is recorded.
 */
import { afterEach, describe, expect, it } from "vitest";
import { checkStore, formatCheckReport } from "../src/check/index.js";
import type { RunEvent, RunRecord } from "../src/core/index.js";
import { createRuntime, type ChatModel, type Logger, type Runtime } from "../src/runtime/index.js";
import type { Store } from "../src/store/index.js";
import { createPgCluster } from "../src/store/postgres/cluster/index.js";
import { createTestPostgresStore, TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { createHeldModel } from "./support/held-model.js";

const TENANT = "local";

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** The held model (answers to "hold…" wait for `release()`), and each of its requests: closed by its signal, or answered to the end. */
function createWatchedModel() {
  const held = createHeldModel();
  const requests: { signal: AbortSignal; isAnswered: boolean }[] = [];
  const model: ChatModel = {
    id: "demo",
    async *stream(request, options) {
      const entry = { signal: options.signal, isAnswered: false };
      requests.push(entry);
      yield* held.model.stream(request, options);
      entry.isAnswered = true;
    },
  };
  return { ...held, model, requests };
}

/** The points of the race a test opens, in the order it chooses, and those it waits for. */
interface Gates {
  /** The create's launch claims the run once this opens. */
  claim: Deferred;
  /** The batch claim that took the run returns (its execution is registered) once this opens. */
  batchReturn: Deferred;
  /** With `isCancelRecordHeld`: the Stop is recorded once this opens. */
  cancelRecord: Deferred;
  /** Reached: the batch claim took the run. */
  batchClaimed: Deferred;
  /** Reached: the create's launch had its claim's answer. */
  claimAnswered: Deferred;
  /** Reached: the Stop is at the store, about to be recorded. */
  cancelAtStore: Deferred;
  /** Reached: this process heard a cancel notice (after the worker's listener, registered before it). */
  cancelNoticeHeard: Deferred;
}

/** The PostgreSQL store, with the race's points gated (every other call goes straight through). */
function gatedStore(store: Store, gates: Gates, isCancelRecordHeld: boolean): Store {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== "function") return value;
      const real = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
      if (property === "claimRun") {
        return async (...args: unknown[]) => {
          await gates.claim.promise;
          try {
            return await real(...args);
          } finally {
            gates.claimAnswered.resolve();
          }
        };
      }
      if (property === "claimQueuedRuns") {
        return async (...args: unknown[]) => {
          const claimed = (await real(...args)) as RunRecord[];
          if (claimed.length > 0) {
            gates.batchClaimed.resolve();
            await gates.batchReturn.promise;
          }
          return claimed;
        };
      }
      if (property === "requestCancel" && isCancelRecordHeld) {
        return async (...args: unknown[]) => {
          gates.cancelAtStore.resolve();
          await gates.cancelRecord.promise;
          return real(...args);
        };
      }
      return real;
    },
  });
}

describe("two launches of one run meet a Stop (PostgreSQL, one process both API and worker)", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /**
   * A runtime with a cluster on a schema of its own; creates a run (the create's launch registers
   * and waits at its claim), wakes the worker and waits until its batch claim took the run.
   */
  async function startRace(options: { isCancelRecordHeld: boolean }) {
    const gates: Gates = {
      claim: deferred(),
      batchReturn: deferred(),
      cancelRecord: deferred(),
      batchClaimed: deferred(),
      claimAnswered: deferred(),
      cancelAtStore: deferred(),
      cancelNoticeHeard: deferred(),
    };
    const store = await createTestPostgresStore();
    cleanups.push(() => store.close());
    const cluster = await createPgCluster({ url: TEST_PG_URL, schema: store.schema });
    cleanups.push(() => cluster.close());
    const watched = createWatchedModel();
    const loggedErrors: string[] = [];
    const logger: Logger = { info: () => {}, warn: () => {}, error: (data, message) => loggedErrors.push(`${message}: ${JSON.stringify(data)}`) };
    const runtime: Runtime = createRuntime({
      store: gatedStore(store, gates, options.isCancelRecordHeld),
      cluster,
      role: "all",
      model: watched.model,
      logger,
      // No poll and no recovery sweep within a test: the fallback that finds a missed cancel at its
      // next poll would hide the race (and one that claims would change it).
      pollMs: 3_600_000,
      leaseMs: 60_000,
    });
    await runtime.start();
    cleanups.push(async () => {
      // Whatever a failing test left waiting goes on, so the runtime can close.
      for (const gate of [gates.claim, gates.batchReturn, gates.cancelRecord]) gate.resolve();
      watched.release();
      await runtime.close();
    });
    cluster.onControl((message) => {
      if (message.kind === "cancel") gates.cancelNoticeHeard.resolve();
    });
    const thread = await runtime.createThread(TENANT, { title: "two launches" });
    const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: "hold on, then answer" } });
    const buffer = runtime.hub.get(TENANT, run.runId)!;
    expect(runtime.activeRunCount).toBe(1);
    cluster.announceQueued();
    await gates.batchClaimed.promise;
    return { gates, runtime, store, watched, run, buffer, loggedErrors };
  }

  /**
   * Lets the race end: whichever comes first, the run's end (it was stopped) or its answer waiting
   * on the model (it was not), then releases the model and checks what a client and the store see.
   */
  async function expectStopped(race: Awaited<ReturnType<typeof startRace>>): Promise<void> {
    const { store, watched, run, buffer, loggedErrors } = race;
    await Promise.race([buffer.whenTerminal(), watched.whenHeld(1)]);
    watched.release();
    await buffer.whenTerminal();
    const events: RunEvent[] = buffer.eventsBetween(0, buffer.lastSeq);
    const types = events.map((event) => event.type);
    const cancelAt = types.indexOf("run.cancel_requested");
    expect(cancelAt, types.join(", ")).toBeGreaterThanOrEqual(0);
    // The Stop was accepted before the model said a word: nothing of the answer may follow.
    expect(types.slice(cancelAt).filter((type) => type === "message.delta" || type === "message.published" || type === "run.completed"), types.join(", ")).toEqual([]);
    expect(types.filter((type) => type === "message.delta"), types.join(", ")).toEqual([]);
    expect(types.at(-1)).toBe("run.cancelled");
    expect(types.filter((type) => type === "run.cancelled")).toHaveLength(1);
    expect((await store.getRun(TENANT, run.runId))?.status).toBe("cancelled");
    expect((await store.listMessages(TENANT, run.threadId)).map((message) => message.role)).toEqual(["user"]);
    // The provider request, if one was made, was closed by the Stop, not answered.
    expect(watched.requests.map((request) => ({ isClosed: request.signal.aborted, isAnswered: request.isAnswered }))).toEqual(
      watched.requests.map(() => ({ isClosed: true, isAnswered: false })),
    );
    const report = await checkStore(store);
    expect(report.violations, formatCheckReport(report)).toEqual([]);
    expect(loggedErrors).toEqual([]);
  }

  it("window 1: the Stop reaches the create's launch while it claims; the batch claim's execution, registered after, stops", async () => {
    const race = await startRace({ isCancelRecordHeld: false });
    const { gates, runtime, run } = race;
    // The batch claim took the run; its execution is not registered yet: the Stop finds the create's launch.
    expect((await runtime.cancelRun(TENANT, run.runId, "user_requested")).kind).toBe("accepted");
    gates.claim.resolve();
    await gates.claimAnswered.promise;
    gates.batchReturn.resolve();
    await expectStopped(race);
  });

  it("window 1: the Stop finds no execution (the create's launch lost the claim) and its notice none either; the batch claim's execution stops", async () => {
    const race = await startRace({ isCancelRecordHeld: false });
    const { gates, runtime, run } = race;
    gates.claim.resolve();
    await gates.claimAnswered.promise;
    // The losing launch ends in the microtasks after its claim's answer.
    await new Promise(setImmediate);
    expect(runtime.activeRunCount).toBe(0);
    expect((await runtime.cancelRun(TENANT, run.runId, "user_requested")).kind).toBe("accepted");
    // The worker heard the notice first (its listener was registered before this one) and had no execution for it.
    await gates.cancelNoticeHeard.promise;
    gates.batchReturn.resolve();
    await expectStopped(race);
  });

  it("window 2: the batch claim's execution registers, and reads no cancel, while the Stop that reached the create's launch is recorded; it stops", async () => {
    const race = await startRace({ isCancelRecordHeld: true });
    const { gates, runtime, run, watched } = race;
    const stopping = runtime.cancelRun(TENANT, run.runId, "user_requested");
    await gates.cancelAtStore.promise;
    // The create's launch is aborted, its Stop not yet recorded: now the batch claim's execution
    // registers, finds no cancel in the store, and asks the model.
    gates.batchReturn.resolve();
    await watched.whenHeld(1);
    gates.cancelRecord.resolve();
    expect((await stopping).kind).toBe("accepted");
    gates.claim.resolve();
    await expectStopped(race);
  });
});
