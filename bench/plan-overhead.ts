import { join } from "node:path";
import { defineAgent, type Agent } from "../src/agents/index.js";
import { CancelScope, createDemoModel, createRuntime, runPlan, silentLogger, type StepDefinition } from "../src/runtime/index.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { createTempDir } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult } from "./benchmark.js";
import { median, round, summarize } from "./statistics.js";

/*
 * What a plan costs per step when the steps themselves cost nothing: (a) 50 instant steps through
 * the bare executor (`runPlan`) and through the whole runtime (a `defineAgent` agent on SQLite,
 * where each step's completion is a `step_completed` checkpoint), against a bare `Promise.all` of
 * the same work; (b) whether a step's completion costs more at step 1,000 of a run than at step 10.
 */

const TENANT = "bench";
const PLAN_STEPS = 50;
/** As the research agent's `max_parallel` in plan-stop. */
const PLAN_CONCURRENCY = 8;
const EXECUTOR_WARMUP_PLANS = 500;
const EXECUTOR_BLOCKS = 10;
const EXECUTOR_PLANS_PER_BLOCK = 200;
const RUNTIME_WARMUP_RUNS = 20;
const RUNTIME_MEASURED_RUNS = 100;
/** Steps of the long run; the windows are steps 5–15 and 995–1,005 (1-based), so it needs a few more. */
const LONG_RUN_STEPS = 1_010;
const EARLY_WINDOW = { from: 5, to: 15 };
const LATE_WINDOW = { from: 995, to: 1_005 };
const LONG_RUN_REPETITIONS = 3;

const work = (index: number): Promise<number> => Promise.resolve(index);

/** runPlan of 50 instant steps vs Promise.all of the same 50 functions: µs per step, median of blocks. */
async function measureExecutor(): Promise<{ planMicros: number[]; bareMicros: number[] }> {
  const steps: StepDefinition[] = Array.from({ length: PLAN_STEPS }, (_, index) => ({ id: `step-${index + 1}`, run: () => work(index) }));
  const indices = steps.map((_, index) => index);
  const plan = async () => {
    const result = await runPlan(steps, { scope: CancelScope.root(), concurrency: PLAN_CONCURRENCY });
    if (result.status !== "completed") throw new Error(`plan ended ${result.status}`);
  };
  const bare = async () => void (await Promise.all(indices.map(work)));
  for (let index = 0; index < EXECUTOR_WARMUP_PLANS; index++) {
    await plan();
    await bare();
  }
  const block = async (once: () => Promise<void>) => {
    const start = performance.now();
    for (let index = 0; index < EXECUTOR_PLANS_PER_BLOCK; index++) await once();
    return ((performance.now() - start) * 1000) / (EXECUTOR_PLANS_PER_BLOCK * PLAN_STEPS);
  };
  const planMicros: number[] = [];
  const bareMicros: number[] = [];
  for (let index = 0; index < EXECUTOR_BLOCKS; index++) {
    // Alternating which goes first, so drift hits both.
    if (index % 2 === 0) {
      planMicros.push(await block(plan));
      bareMicros.push(await block(bare));
    } else {
      bareMicros.push(await block(bare));
      planMicros.push(await block(plan));
    }
  }
  return { planMicros, bareMicros };
}

/** An agent of `count` independent steps, each returning a small value at once; `onStart` sees each step begin. */
function instantAgent(name: string, count: number, concurrency: number, onStart?: (index: number) => void): Agent {
  return defineAgent({
    name,
    concurrency,
    steps: () =>
      Array.from({ length: count }, (_, index) => ({
        id: `step-${index + 1}`,
        run: () => {
          onStart?.(index);
          return Promise.resolve({ index });
        },
      })),
  });
}

/** Times each `completeStep` call of the store (by step id), passing everything through. */
function timeCompletions(store: Store): { store: Store; micros: Map<string, number> } {
  const micros = new Map<string, number>();
  const timed = new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property !== "completeStep") return value.bind(target) as unknown;
      return async (...args: Parameters<Store["completeStep"]>) => {
        const start = performance.now();
        try {
          return await target.completeStep(...args);
        } finally {
          micros.set(args[0].stepId, (performance.now() - start) * 1000);
        }
      };
    },
  });
  return { store: timed, micros };
}

/** A runtime on a fresh SQLite file with `agents`, and a helper that runs one to its end. */
async function openRuntime(prefix: string, agents: readonly Agent[], wrap: (store: Store) => Store = (store) => store) {
  const temp = createTempDir(prefix);
  const store = createSqliteStore({ path: join(temp.dir, `${prefix}.db`) });
  const runtime = createRuntime({ store: wrap(store), model: createDemoModel(), logger: silentLogger, agents });
  await runtime.start();
  /** Starts `agent` on a fresh thread; resolves with the ms from startRun() to the terminal run. */
  const runOnce = async (agent: string): Promise<number> => {
    const thread = await runtime.createThread(TENANT);
    const start = performance.now();
    const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: "go" }, agent });
    const final = await runtime.waitForTerminal(TENANT, run.runId, 60_000);
    const ms = performance.now() - start;
    if (final?.status !== "completed") throw new Error(`${agent} run ended ${final?.status}`);
    return ms;
  };
  return {
    runOnce,
    async close() {
      await runtime.close();
      await store.close();
      temp.remove();
    },
  };
}

/** The agents of the runtime measurement: 50 instant steps at concurrency 8 and at 1, and one step. */
const RUNTIME_AGENTS = ["instant-50", "instant-50-serial", "instant-1"] as const;
type RuntimeAgent = (typeof RUNTIME_AGENTS)[number];

/**
 * Runs of each agent in turn (the order rotated each round); per step = (median 50-step run −
 * median 1-step run) / 49.
 */
async function measureRuntimePlan(): Promise<Record<RuntimeAgent, number[]>> {
  const runtime = await openRuntime("plan-overhead", [
    instantAgent("instant-50", PLAN_STEPS, PLAN_CONCURRENCY),
    instantAgent("instant-50-serial", PLAN_STEPS, 1),
    instantAgent("instant-1", 1, PLAN_CONCURRENCY),
  ]);
  const times: Record<RuntimeAgent, number[]> = { "instant-50": [], "instant-50-serial": [], "instant-1": [] };
  try {
    for (let round = 0; round < RUNTIME_WARMUP_RUNS + RUNTIME_MEASURED_RUNS; round++) {
      for (let index = 0; index < RUNTIME_AGENTS.length; index++) {
        const agent = RUNTIME_AGENTS[(round + index) % RUNTIME_AGENTS.length]!;
        const ms = await runtime.runOnce(agent);
        if (round >= RUNTIME_WARMUP_RUNS) times[agent].push(ms);
      }
    }
  } finally {
    await runtime.close();
  }
  return times;
}

/** One run of LONG_RUN_STEPS steps, concurrency 1: each step's completeStep time and its wall time (its start → the next step's start). */
async function longRun(): Promise<{ completeMicros: number[]; wallMicros: number[]; totalMs: number }> {
  const starts: number[] = [];
  const agent = instantAgent("long", LONG_RUN_STEPS, 1, (index) => (starts[index] = performance.now()));
  let micros = new Map<string, number>();
  const runtime = await openRuntime("plan-overhead-long", [agent], (store) => {
    const timed = timeCompletions(store);
    micros = timed.micros;
    return timed.store;
  });
  try {
    const totalMs = await runtime.runOnce("long");
    const completeMicros = Array.from({ length: LONG_RUN_STEPS }, (_, index) => micros.get(`step-${index + 1}`) ?? Number.NaN);
    const wallMicros = starts.slice(1).map((start, index) => (start - starts[index]!) * 1000);
    return { completeMicros, wallMicros, totalMs };
  } finally {
    await runtime.close();
  }
}

/** The median of the 1-based steps `from`..`to` of `values`. */
const windowMedian = (values: readonly number[], window: { from: number; to: number }) => median(values.slice(window.from - 1, window.to));

/** Per-step cost of a plan of instant steps (bare executor and whole runtime), and a completion's cost at step 10 vs step 1,000. */
export const planOverhead: Benchmark = {
  name: "plan-overhead",
  summary:
    `${PLAN_STEPS} instant steps (concurrency ${PLAN_CONCURRENCY}) through runPlan and through the runtime (SQLite, a step_completed checkpoint each) vs Promise.all; ` +
    `completeStep and step wall time at steps ${EARLY_WINDOW.from}–${EARLY_WINDOW.to} vs ${LATE_WINDOW.from}–${LATE_WINDOW.to} of one ${LONG_RUN_STEPS}-step run`,
  async run({ log }): Promise<BenchmarkResult> {
    const executor = await measureExecutor();
    log(`plan-overhead: executor measured (${EXECUTOR_BLOCKS} blocks of ${EXECUTOR_PLANS_PER_BLOCK} plans each way)`);
    const runtimePlan = await measureRuntimePlan();
    log(`plan-overhead: ${RUNTIME_MEASURED_RUNS} runs of each agent measured`);
    await longRun(); // warm-up, on its own file
    const long: Awaited<ReturnType<typeof longRun>>[] = [];
    for (let index = 0; index < LONG_RUN_REPETITIONS; index++) {
      long.push(await longRun());
      log(`plan-overhead: ${LONG_RUN_STEPS}-step run ${index + 1}/${LONG_RUN_REPETITIONS}`);
    }

    const planStep = round(median(executor.planMicros), 2);
    const bareStep = round(median(executor.bareMicros), 3);
    const fifty = median(runtimePlan["instant-50"]);
    const one = median(runtimePlan["instant-1"]);
    const runtimeStep = round(((fifty - one) / (PLAN_STEPS - 1)) * 1000, 1);
    const serialStep = round(((median(runtimePlan["instant-50-serial"]) - one) / (PLAN_STEPS - 1)) * 1000, 1);
    const pick = (of: "completeMicros" | "wallMicros", window: { from: number; to: number }) => round(median(long.map((run) => windowMedian(run[of], window))), 1);
    const earlyComplete = pick("completeMicros", EARLY_WINDOW);
    const lateComplete = pick("completeMicros", LATE_WINDOW);
    const earlyWall = pick("wallMicros", EARLY_WINDOW);
    const lateWall = pick("wallMicros", LATE_WINDOW);
    const early = `steps ${EARLY_WINDOW.from}–${EARLY_WINDOW.to}`;
    const late = `steps ${LATE_WINDOW.from.toLocaleString("en")}–${LATE_WINDOW.to.toLocaleString("en")}`;
    return {
      figures: [
        compared({ label: `runPlan, ${PLAN_STEPS} instant steps: time per step (median of ${EXECUTOR_BLOCKS} blocks)`, value: planStep, unit: "µs" }, { label: "Promise.all", value: bareStep }),
        compared(
          { label: `runtime agent, ${PLAN_STEPS} instant steps (SQLite, step_completed each): time per step, (run₅₀ − run₁) / 49, medians`, value: runtimeStep, unit: "µs" },
          { label: "Promise.all", value: bareStep },
        ),
        compared({ label: `the same at concurrency 1: time per step`, value: serialStep, unit: "µs" }, { label: "Promise.all", value: bareStep }),
        { label: `runtime agent: whole ${PLAN_STEPS}-step run / 1-step run, median`, value: round(fifty, 2), unit: "ms", baseline: { label: "1-step run", value: round(one, 2) }, ratio: fifty / one },
        { label: `completeStep at ${early} (median)`, value: earlyComplete, unit: "µs" },
        { ...compared({ label: `completeStep at ${late} (median)`, value: lateComplete, unit: "µs" }, { label: early, value: earlyComplete }), target: "ratio ≤ 1.3", isMet: lateComplete / earlyComplete <= 1.3 },
        { label: `step wall time (start → next start, concurrency 1) at ${early} (median)`, value: earlyWall, unit: "µs" },
        { ...compared({ label: `step wall time at ${late} (median)`, value: lateWall, unit: "µs" }, { label: early, value: earlyWall }), target: "ratio ≤ 1.3", isMet: lateWall / earlyWall <= 1.3 },
      ],
      details: {
        executor: {
          steps: PLAN_STEPS,
          concurrency: PLAN_CONCURRENCY,
          warmupPlans: EXECUTOR_WARMUP_PLANS,
          blocks: EXECUTOR_BLOCKS,
          plansPerBlock: EXECUTOR_PLANS_PER_BLOCK,
          runPlanMicrosPerStep: executor.planMicros.map((value) => round(value, 3)),
          promiseAllMicrosPerStep: executor.bareMicros.map((value) => round(value, 4)),
        },
        runtime: {
          note: "createRuntime on a SQLite temp file, the demo model (unused); each run on a fresh thread, startRun() → waitForTerminal(); the three agents' runs in turn",
          warmupRuns: RUNTIME_WARMUP_RUNS,
          fiftyStepRunMs: summarize(runtimePlan["instant-50"]),
          fiftyStepSerialRunMs: summarize(runtimePlan["instant-50-serial"]),
          oneStepRunMs: summarize(runtimePlan["instant-1"]),
        },
        longRun: {
          steps: LONG_RUN_STEPS,
          concurrency: 1,
          repetitions: LONG_RUN_REPETITIONS,
          note: "completeStep timed around the store call (a proxy over the SQLite store); wall time = a step's run() called → the next step's run() called",
          runs: long.map((run) => ({
            totalMs: round(run.totalMs, 1),
            completeMicros: { early: round(windowMedian(run.completeMicros, EARLY_WINDOW), 1), late: round(windowMedian(run.completeMicros, LATE_WINDOW), 1), all: summarize(run.completeMicros) },
            wallMicros: { early: round(windowMedian(run.wallMicros, EARLY_WINDOW), 1), late: round(windowMedian(run.wallMicros, LATE_WINDOW), 1), all: summarize(run.wallMicros) },
          })),
        },
      },
    };
  },
};
