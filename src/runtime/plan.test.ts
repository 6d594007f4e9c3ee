import { getEventListeners } from "node:events";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CancelScope } from "./cancel-scope.js";
import { runPlan, type PlanResult, type StepContext, type StepDefinition, type StepState, type StepStatus } from "./plan.js";

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function createDeferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback run; an ordering point, not a timed wait. */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Steps whose run() the test settles by hand: `started(id)` waits for a run() to be called,
 * `reached(id, status)` for a status change reported by the plan.
 */
class Harness {
  readonly scope = CancelScope.root();
  readonly log: Array<{ id: string; status: StepStatus }> = [];
  readonly startOrder: string[] = [];
  readonly contexts = new Map<string, StepContext>();
  inFlight = 0;
  maxInFlight = 0;
  readonly #runs = new Map<string, Deferred<unknown>>();
  readonly #started = new Map<string, Deferred<StepContext>>();
  readonly #reached = new Map<string, Deferred<void>>();

  step(id: string, dependsOn: readonly string[] = [], onStart?: (context: StepContext) => void): StepDefinition {
    return {
      id,
      dependsOn,
      run: (context) => {
        const run = createDeferred<unknown>();
        this.#runs.set(id, run);
        this.contexts.set(id, context);
        this.startOrder.push(id);
        this.inFlight += 1;
        this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
        onStart?.(context);
        this.#startedOf(id).resolve(context);
        return run.promise;
      },
    };
  }

  run(steps: readonly StepDefinition[], concurrency?: number): Promise<PlanResult> {
    return runPlan(steps, {
      scope: this.scope,
      concurrency,
      onStepStatus: (step) => {
        this.log.push({ id: step.id, status: step.status });
        this.#reachedOf(step.id, step.status).resolve();
      },
    });
  }

  started(id: string): Promise<StepContext> {
    return this.#startedOf(id).promise;
  }

  reached(id: string, status: StepStatus): Promise<void> {
    return this.#reachedOf(id, status).promise;
  }

  resolve(id: string, value: unknown = `result of ${id}`): void {
    this.#settle(id).resolve(value);
  }

  reject(id: string, error: unknown): void {
    this.#settle(id).reject(error);
  }

  statusesOf(id: string): StepStatus[] {
    return this.log.filter((entry) => entry.id === id).map((entry) => entry.status);
  }

  #settle(id: string): Deferred<unknown> {
    const run = this.#runs.get(id);
    if (run === undefined) throw new Error(`step ${id} has not started`);
    this.#runs.delete(id);
    this.inFlight -= 1;
    return run;
  }

  #startedOf(id: string): Deferred<StepContext> {
    if (!this.#started.has(id)) this.#started.set(id, createDeferred());
    return this.#started.get(id)!;
  }

  #reachedOf(id: string, status: StepStatus): Deferred<void> {
    const key = `${id}:${status}`;
    if (!this.#reached.has(key)) this.#reached.set(key, createDeferred());
    return this.#reached.get(key)!;
  }
}

function trackSettled<T>(promise: Promise<T>): { readonly isSettled: boolean; readonly promise: Promise<T> } {
  const tracked = { isSettled: false, promise };
  promise.then(
    () => (tracked.isSettled = true),
    () => (tracked.isSettled = true),
  );
  return tracked;
}

function statusMap(result: PlanResult): Record<string, StepStatus> {
  return Object.fromEntries([...result.steps].map(([id, step]) => [id, step.status]));
}

describe("runPlan", () => {
  it("starts a step only once all its dependencies have completed", async () => {
    const harness = new Harness();
    const plan = harness.run([
      harness.step("d", ["b", "c"]),
      harness.step("a"),
      harness.step("b", ["a"]),
      harness.step("c", ["a"]),
    ]);

    await harness.started("a");
    expect(harness.startOrder).toEqual(["a"]);
    harness.resolve("a");
    await Promise.all([harness.started("b"), harness.started("c")]);
    harness.resolve("b");
    await harness.reached("b", "completed");
    expect(harness.startOrder).not.toContain("d");
    harness.resolve("c");
    const d = await harness.started("d");
    expect(d.result("b")).toBe("result of b");
    expect(d.result("c")).toBe("result of c");
    harness.resolve("d", 42);

    const result = await plan;
    expect(result.status).toBe("completed");
    expect(result.error).toBeUndefined();
    expect(result.steps.get("d")).toEqual({ id: "d", status: "completed", result: 42 });
    expect(harness.statusesOf("d")).toEqual(["not_started", "in_progress", "completed"]);
  });

  it("never has more than `concurrency` steps in flight, and starts them in order", async () => {
    const harness = new Harness();
    const ids = Array.from({ length: 10 }, (_, index) => `s${index}`);
    const plan = harness.run(
      ids.map((id) => harness.step(id)),
      3,
    );

    for (const id of ids) {
      await harness.started(id);
      expect(harness.inFlight).toBeLessThanOrEqual(3);
      harness.resolve(id);
    }

    expect((await plan).status).toBe("completed");
    expect(harness.maxInFlight).toBe(3);
    expect(harness.startOrder).toEqual(ids);
  });

  it("defaults to a concurrency of 4", async () => {
    const harness = new Harness();
    const ids = Array.from({ length: 6 }, (_, index) => `s${index}`);
    const plan = harness.run(ids.map((id) => harness.step(id)));
    await harness.started("s3");
    await flush();
    expect(harness.startOrder).toEqual(["s0", "s1", "s2", "s3"]);
    for (const id of ids) {
      await harness.started(id);
      harness.resolve(id);
    }
    await plan;
    expect(harness.maxInFlight).toBe(4);
  });

  it("runs the chat loop: a model step adds tool steps and the next model step", async () => {
    const harness = new Harness();
    const plan = harness.run([
      harness.step("model-1", [], (context) => {
        context.addStep(harness.step("tool-a"));
        context.addStep(harness.step("tool-b"));
        context.addStep(harness.step("model-2", ["tool-a", "tool-b"]));
      }),
    ]);

    await harness.started("model-1");
    await Promise.all([harness.started("tool-a"), harness.started("tool-b")]);
    harness.resolve("model-1", "calls tools");
    await harness.reached("model-1", "children_in_progress");
    harness.resolve("tool-a", "sunny");
    harness.resolve("tool-b", "12°C");
    const model2 = await harness.started("model-2");
    expect(model2.result("tool-a")).toBe("sunny");
    expect(harness.statusesOf("model-1").at(-1)).toBe("children_in_progress");
    harness.resolve("model-2", "It is sunny and 12°C.");

    const result = await plan;
    expect(result.status).toBe("completed");
    expect(result.steps.get("model-1")).toEqual({ id: "model-1", status: "completed", result: "calls tools" });
    expect(harness.statusesOf("model-1")).toEqual(["not_started", "in_progress", "children_in_progress", "completed"]);
    // The parent completes only after its last child did.
    const order = harness.log.map((entry) => `${entry.id}:${entry.status}`);
    expect(order.indexOf("model-1:completed")).toBeGreaterThan(order.indexOf("model-2:completed"));
  });

  it("completes a parent whose children finished before its own run()", async () => {
    const harness = new Harness();
    const plan = harness.run([harness.step("parent", [], (context) => context.addStep(harness.step("child")))]);
    await harness.started("child");
    harness.resolve("child");
    await harness.reached("child", "completed");
    harness.resolve("parent");
    expect((await plan).status).toBe("completed");
    expect(harness.statusesOf("parent")).toEqual(["not_started", "in_progress", "completed"]);
  });

  it("fails a children_in_progress parent when a child fails", async () => {
    const harness = new Harness();
    const failure = new Error("tool crashed");
    const plan = harness.run([
      harness.step("model-1", [], (context) => {
        context.addStep(harness.step("tool"));
        context.addStep(harness.step("model-2", ["tool"]));
      }),
    ]);
    await harness.started("tool");
    harness.resolve("model-1");
    await harness.reached("model-1", "children_in_progress");
    harness.reject("tool", failure);

    const result = await plan;
    expect(result).toMatchObject({ status: "failed", error: failure });
    expect(statusMap(result)).toEqual({ "model-1": "failed", tool: "failed", "model-2": "cancelled" });
    expect(result.steps.get("model-1")?.error).toBe(failure);
  });

  describe("cancel", () => {
    it("aborts every in-progress step at once, cancels the rest recursively, and waits for started steps", async () => {
      const harness = new Harness();
      const plan = trackSettled(
        harness.run(
          [
            harness.step("a"),
            harness.step("b"),
            harness.step("c"),
            harness.step("d", ["a"]),
            harness.step("e", ["d"]),
            harness.step("f"),
          ],
          3,
        ),
      );
      const running = await Promise.all(["a", "b", "c"].map((id) => harness.started(id)));
      const reason = new Error("user pressed Stop");

      harness.scope.cancel(reason);

      // Synchronously, before cancel() even returned to us: all at once, none awaited in turn.
      expect(running.map((context) => context.signal.aborted)).toEqual([true, true, true]);
      expect(running.map((context) => context.signal.reason)).toEqual([reason, reason, reason]);
      expect(running.every((context) => context.scope.isCancelRequested)).toBe(true);
      expect(["d", "e", "f"].map((id) => harness.statusesOf(id).at(-1))).toEqual(["cancelled", "cancelled", "cancelled"]);

      harness.resolve("a", "finished anyway"); // a late success is recorded truthfully
      harness.reject("b", reason);
      await harness.reached("b", "cancelled");
      await flush();
      expect(plan.isSettled).toBe(false); // c is still running: never report cancelled early

      harness.reject("c", reason);
      const result = await plan.promise;
      expect(result).toMatchObject({ status: "cancelled", error: reason });
      expect(statusMap(result)).toEqual({
        a: "completed",
        b: "cancelled",
        c: "cancelled",
        d: "cancelled",
        e: "cancelled",
        f: "cancelled",
      });
      expect(result.steps.get("a")?.result).toBe("finished anyway");
      expect(harness.startOrder).toEqual(["a", "b", "c"]);
      expect(getEventListeners(harness.scope.signal, "abort")).toHaveLength(0);
    });

    it("starts nothing when the scope is already cancelled", async () => {
      const harness = new Harness();
      harness.scope.cancel("too late");
      const result = await harness.run([harness.step("a"), harness.step("b", ["a"])]);
      expect(result).toMatchObject({ status: "cancelled", error: "too late" });
      expect(statusMap(result)).toEqual({ a: "cancelled", b: "cancelled" });
      expect(harness.startOrder).toEqual([]);
    });

    it("cancels steps added after the cancel instead of starting them", async () => {
      const harness = new Harness();
      const plan = harness.run([harness.step("model")]);
      const context = await harness.started("model");
      harness.scope.cancel();
      context.addStep(harness.step("tool"));
      harness.resolve("model");
      const result = await plan;
      expect(statusMap(result)).toEqual({ model: "cancelled", tool: "cancelled" });
      expect(harness.startOrder).toEqual(["model"]);
    });

    it("treats a step that cancelled its own scope and rejected as cancelled", async () => {
      const harness = new Harness();
      const plan = harness.run([harness.step("a"), harness.step("b", ["a"])]);
      const context = await harness.started("a");
      context.scope.cancel("gave up");
      harness.reject("a", context.signal.reason);
      const result = await plan;
      expect(result).toMatchObject({ status: "cancelled", error: "gave up" });
      expect(statusMap(result)).toEqual({ a: "cancelled", b: "cancelled" });
    });
  });

  describe("failure", () => {
    it("fails the step, cancels its dependents and in-progress siblings, and waits for them", async () => {
      const harness = new Harness();
      const failure = new Error("provider 500");
      const plan = trackSettled(
        harness.run([harness.step("a"), harness.step("b"), harness.step("c", ["a"]), harness.step("d")], 2),
      );
      const [, b] = await Promise.all([harness.started("a"), harness.started("b")]);

      harness.reject("a", failure);
      await harness.reached("a", "failed");

      expect(b.signal.aborted).toBe(true);
      expect(b.signal.reason).toMatchObject({ name: "AbortError", cause: failure });
      expect(harness.statusesOf("c").at(-1)).toBe("cancelled");
      await flush();
      expect(plan.isSettled).toBe(false);

      harness.resolve("b");
      const result = await plan.promise;
      expect(result).toMatchObject({ status: "failed", error: failure });
      expect(result.steps.get("a")).toEqual({ id: "a", status: "failed", error: failure });
      expect(statusMap(result)).toEqual({ a: "failed", b: "completed", c: "cancelled", d: "cancelled" });
      expect(harness.startOrder).toEqual(["a", "b"]);
    });

    it("fails a step whose run() throws synchronously", async () => {
      const failure = new Error("bad input");
      const result = await runPlan(
        [
          {
            id: "a",
            run: () => {
              throw failure;
            },
          },
        ],
        { scope: CancelScope.root() },
      );
      expect(result).toMatchObject({ status: "failed", error: failure });
    });
  });

  describe("programming errors", () => {
    const noop = (): Promise<void> => Promise.resolve();

    it("rejects at once on a duplicate id, an unknown dependency or a cycle, before running anything", async () => {
      const scope = CancelScope.root();
      let runs = 0;
      const run = (): Promise<void> => Promise.resolve(void (runs += 1));
      await expect(runPlan([{ id: "a", run }, { id: "a", run }], { scope })).rejects.toThrow(/duplicate step id "a"/);
      await expect(runPlan([{ id: "a", dependsOn: ["nope"], run }], { scope })).rejects.toThrow(/unknown step "nope"/);
      await expect(
        runPlan(
          [
            { id: "x", run },
            { id: "a", dependsOn: ["b"], run },
            { id: "b", dependsOn: ["a"], run },
          ],
          { scope },
        ),
      ).rejects.toThrow(/depends on itself/);
      await expect(runPlan([{ id: "a", dependsOn: ["a"], run }], { scope })).rejects.toThrow(/depends on itself/);
      await expect(runPlan([{ id: "a", run }], { scope, concurrency: 0 })).rejects.toThrow(RangeError);
      expect(runs).toBe(0);
    });

    it("throws from addStep on a duplicate id, an unknown dependency, or a wait on its own parent", async () => {
      const harness = new Harness();
      const plan = harness.run([harness.step("a"), harness.step("model")]);
      const context = await harness.started("model");

      expect(() => context.addStep({ id: "a", run: noop })).toThrow(/duplicate/);
      expect(() => context.addStep({ id: "t", dependsOn: ["nope"], run: noop })).toThrow(/unknown step/);
      expect(() => context.addStep({ id: "t", dependsOn: ["model"], run: noop })).toThrow(/its own parent/);
      context.addStep(harness.step("tool"));
      const tool = await harness.started("tool");
      // A grandchild that waits for its grandparent would wait forever too.
      expect(() => tool.addStep({ id: "g", dependsOn: ["model"], run: noop })).toThrow(/its own parent/);
      expect(() => context.result("tool")).toThrow(/no result \(in_progress\)/);

      harness.resolve("a");
      harness.resolve("tool");
      harness.resolve("model");
      expect((await plan).status).toBe("completed");
      expect(() => context.addStep({ id: "late", run: noop })).toThrow(/after its run\(\) settled/);
    });
  });

  it("rejects instead of hanging when onStepStatus throws", async () => {
    const broken = new Error("observer broke");
    const plan = runPlan([{ id: "a", run: () => Promise.resolve() }], {
      scope: CancelScope.root(),
      onStepStatus: (step) => {
        if (step.status === "completed") throw broken;
      },
    });
    await expect(plan).rejects.toBe(broken);
  });

  it("leaves no listener on the run's signal after a thousand steps", async () => {
    const scope = CancelScope.root();
    const steps = Array.from({ length: 1_000 }, (_, index) => ({
      id: `s${index}`,
      dependsOn: index > 0 ? [`s${index - 1}`] : [],
      run: () => Promise.resolve(index),
    }));
    const result = await runPlan(steps, { scope, concurrency: 8 });
    expect(result.status).toBe("completed");
    expect(getEventListeners(scope.signal, "abort")).toHaveLength(0);
  });
});

describe("runPlan invariants (property)", () => {
  type Action = { readonly pick: number; readonly kind: "resolve" | "reject" | "cancel" };
  interface RandomStep {
    readonly dependsOn: readonly number[];
    readonly childDependsOn: number | undefined; // spawns a child depending on that earlier step
    readonly spawnsChild: boolean;
  }

  const planArbitrary = fc
    .array(
      fc.record({
        dependencyPicks: fc.array(fc.nat(), { maxLength: 3 }),
        spawnsChild: fc.boolean(),
        childDependencyPick: fc.option(fc.nat()),
      }),
      { minLength: 1, maxLength: 10 },
    )
    .map((raw): RandomStep[] =>
      raw.map((step, index) => ({
        dependsOn: index === 0 ? [] : [...new Set(step.dependencyPicks.map((pick) => pick % index))],
        spawnsChild: step.spawnsChild,
        childDependsOn: index === 0 || step.childDependencyPick === null ? undefined : step.childDependencyPick % index,
      })),
    );
  const actionArbitrary: fc.Arbitrary<Action> = fc.record({
    pick: fc.nat(),
    kind: fc.oneof(
      { arbitrary: fc.constant("resolve" as const), weight: 8 },
      { arbitrary: fc.constant("reject" as const), weight: 1 },
      { arbitrary: fc.constant("cancel" as const), weight: 1 },
    ),
  });

  it("never starts a step early or after a halt, respects concurrency, and never leaves a terminal status", async () => {
    await fc.assert(
      fc.asyncProperty(
        planArbitrary,
        fc.integer({ min: 1, max: 4 }),
        fc.array(actionArbitrary, { maxLength: 40 }),
        async (randomSteps, concurrency, actions) => {
          const scope = CancelScope.root();
          const violations: string[] = [];
          const statusNow = new Map<string, StepStatus>();
          const running: Array<{ id: string; run: Deferred<unknown> }> = [];
          const startedIds: string[] = [];
          let maxInFlight = 0;
          let halt: "failed" | "cancelled" | undefined;
          // What each settled run() must be recorded as: a late success is `completed`, a rejection
          // after the halt `cancelled`, only one before it `failed`.
          const expected = new Map<string, StepStatus>();

          const define = (id: string, dependsOn: readonly string[], spawn?: StepDefinition): StepDefinition => ({
            id,
            dependsOn,
            run: (context) => {
              if (halt !== undefined) violations.push(`${id} started after the plan ${halt}`);
              for (const dependency of dependsOn) {
                if (statusNow.get(dependency) !== "completed") violations.push(`${id} started before ${dependency}`);
              }
              const run = createDeferred<unknown>();
              running.push({ id, run });
              startedIds.push(id);
              maxInFlight = Math.max(maxInFlight, running.length);
              if (spawn !== undefined) context.addStep(spawn);
              return run.promise;
            },
          });
          const steps = randomSteps.map((step, index) => {
            const child =
              step.spawnsChild ?
                define(`s${index}.child`, step.childDependsOn === undefined ? [] : [`s${step.childDependsOn}`])
              : undefined;
            return define(
              `s${index}`,
              step.dependsOn.map((dependency) => `s${dependency}`),
              child,
            );
          });

          let settledWith: { result: PlanResult; unsettledRuns: number } | undefined;
          const plan = runPlan(steps, {
            scope,
            concurrency,
            onStepStatus: (step: StepState) => {
              const previous = statusNow.get(step.id);
              if (previous !== undefined && ["completed", "failed", "cancelled"].includes(previous)) {
                violations.push(`${step.id} left terminal ${previous} for ${step.status}`);
              }
              statusNow.set(step.id, step.status);
              if (step.status === "failed") halt ??= "failed";
            },
          });
          plan.then(
            (result) => (settledWith = { result, unsettledRuns: running.length }),
            (error: unknown) => violations.push(`plan rejected: ${String(error)}`),
          );

          for (let index = 0; settledWith === undefined && violations.length === 0; index += 1) {
            await flush();
            if (settledWith !== undefined) break;
            if (running.length === 0) {
              violations.push("idle but unsettled");
              break;
            }
            const action = actions[index] ?? { pick: 0, kind: "resolve" };
            if (action.kind === "cancel") {
              halt ??= "cancelled";
              scope.cancel("stop");
              continue;
            }
            const [picked] = running.splice(action.pick % running.length, 1);
            if (picked === undefined) continue;
            if (action.kind === "resolve") {
              picked.run.resolve(picked.id);
              expected.set(picked.id, "completed");
            } else {
              picked.run.reject(new Error(`${picked.id} failed`));
              expected.set(picked.id, halt === undefined ? "failed" : "cancelled");
            }
          }

          expect(violations).toEqual([]);
          const { result, unsettledRuns } = settledWith!;
          expect(unsettledRuns).toBe(0);
          expect(maxInFlight).toBeLessThanOrEqual(concurrency);
          expect(result.status).toBe(halt ?? "completed");
          for (const [id, step] of result.steps) {
            expect(["completed", "failed", "cancelled"]).toContain(step.status);
            expect(statusNow.get(id)).toBe(step.status);
            if (!startedIds.includes(id)) expect(step.status).toBe("cancelled");
            // A parent's own outcome can be overridden by a child's (checked in the unit tests).
            const hasChildren = [...result.steps.keys()].some((other) => other.startsWith(`${id}.`));
            if (!hasChildren && expected.has(id)) expect(step.status).toBe(expected.get(id));
          }
          for (const step of steps) {
            if (result.steps.get(step.id)?.status !== "completed") continue;
            for (const dependency of step.dependsOn ?? []) expect(result.steps.get(dependency)?.status).toBe("completed");
          }
          expect(getEventListeners(scope.signal, "abort")).toHaveLength(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});
