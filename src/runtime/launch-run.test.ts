import { describe, expect, it } from "vitest";
import { defaultRedactor, systemClock, type RunRecord } from "../core/index.js";
import type { ChatModel } from "../core/model.js";
import type { Store } from "../store/index.js";
import { AgentRegistry } from "../agents/agent-registry.js";
import { builtInAgents } from "../agents/built-in-agents.js";
import { launchRun, type LaunchRunContext } from "./launch-run.js";
import type { RunExecution } from "./run-execution.js";
import { runKey } from "./run-key.js";

/**
 * Two launches of one run: the create launches it (and claims it) while a worker's batch claim
 * has already taken it and executes it. The launch that lost the claim must leave the winner
 * registered, or a Stop (a TERMINATE, an interrupt) finds no execution here and the run goes on.
 */
describe("launchRun, two launches of one run", () => {
  const run = { tenantId: "local", runId: "run_1", threadId: "thr_1", attempt: 1, status: "queued" } as RunRecord;
  const key = runKey(run.tenantId, run.runId);

  function setUp() {
    let settleClaim: (claimed: RunRecord | undefined) => void = () => {};
    const claim = new Promise<RunRecord | undefined>((resolve) => (settleClaim = resolve));
    // Every other store call of the executing run waits: it stays in the middle of its work.
    const store = new Proxy({} as Store, {
      get: (_target, name) => (name === "claimRun" ? () => claim : name === "releaseLease" ? async () => true : () => new Promise(() => {})),
    });
    const active = new Map<string, RunExecution>();
    // Only the launch that lost the claim ends: the winner waits on the store for ever.
    let markLoserEnded: () => void = () => {};
    const loserEnded = new Promise<void>((resolve) => (markLoserEnded = resolve));
    const context: LaunchRunContext = {
      store,
      model: { id: "demo", stream: () => (async function* () {})() } as ChatModel,
      clock: systemClock,
      logger: { info: () => {}, warn: () => {}, error: () => {} },
      redactor: defaultRedactor,
      leaseMs: 30_000,
      workerId: "wrk_1",
      tools: new Map(),
      toolDefinitions: [],
      agents: new AgentRegistry(builtInAgents()),
      observer: {},
      active,
      executions: new Set(),
      disconnectWatch: { watch: () => {}, forget: () => {} } as unknown as LaunchRunContext["disconnectWatch"],
      isClosed: () => true,
      emitter: () => () => {},
      trace: () => {},
      cancelRun: async () => {},
      awaitApproval: async () => "rejected",
      admitNext: async () => {},
      onRunSettled: () => markLoserEnded(),
      liveOutputs: new Map(),
    };
    return { context, active, settleClaim, loserEnded };
  }

  it("the create's launch claims, then the batch claim's execution takes the key; the loser leaves it", async () => {
    const { context, active, settleClaim, loserEnded } = setUp();
    launchRun(context, run);
    launchRun(context, { ...run, status: "running" }, true);
    const winner = active.get(key)!;
    settleClaim(undefined);
    await loserEnded;
    expect(active.get(key)).toBe(winner);
    winner.stop.apply({ type: "stop_recorded", reason: "thread_terminated" });
    expect(winner.scope.signal.aborted).toBe(true);
  });

  it("the batch claim's execution is registered first; a later launch that loses the claim never takes its key", async () => {
    const { context, active, settleClaim, loserEnded } = setUp();
    launchRun(context, { ...run, status: "running" }, true);
    const winner = active.get(key)!;
    launchRun(context, run);
    expect(active.get(key)).toBe(winner);
    settleClaim(undefined);
    await loserEnded;
    expect(active.get(key)).toBe(winner);
  });
});
