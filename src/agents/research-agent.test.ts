import { describe, expect, it } from "vitest";
import { createResearchAgent, researchConfigSchema, subtasksFrom } from "./research-agent.js";

describe("the research agent", () => {
  it("takes 1–100 subtasks and 1–32 in flight (default 4), nothing else", () => {
    expect(researchConfigSchema.parse({})).toEqual({ max_parallel: 4 });
    expect(researchConfigSchema.parse({ subtasks: [" a "], max_parallel: 32 })).toEqual({ subtasks: ["a"], max_parallel: 32 });
    for (const bad of [{ subtasks: [] }, { subtasks: Array(101).fill("x") }, { subtasks: [""] }, { max_parallel: 0 }, { max_parallel: 33 }, { max_parallel: 1.5 }, { other: 1 }]) {
      expect(researchConfigSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });

  it("runs at most max_parallel subtasks at once", () => {
    const agent = createResearchAgent();
    const concurrency = agent.concurrency as (config: { max_parallel: number }) => number;
    expect(concurrency({ max_parallel: 8 })).toBe(8);
  });

  it("plans from config.subtasks without a model call, then one step per subtask and a synthesis that waits for all", async () => {
    const agent = createResearchAgent();
    const context = { runId: "run_1", threadId: "thr_1", input: "Why?", messages: [], tools: [], config: { subtasks: ["a", "b"], max_parallel: 2 } };
    const [plan] = agent.steps(context);
    expect(plan!.id).toBe("plan");
    const result = await plan!.run({ ...context, generate: () => Promise.reject(new Error("no model call")) } as never);
    expect(result).toEqual(["a", "b"]);
    const next = plan!.next!(result, context);
    expect(next.map((step) => [step.id, step.dependsOn ?? []])).toEqual([
      ["subtask-1", []],
      ["subtask-2", []],
      ["synthesis", ["subtask-1", "subtask-2"]],
    ]);
  });

  it("reads subtasks from a planning answer: one per line, list marks dropped; the request when it names none", () => {
    expect(subtasksFrom("1. First\n- Second\n\n* Third\n  4) Fourth  ", "req")).toEqual(["First", "Second", "Third", "Fourth"]);
    expect(subtasksFrom("   \n", "the request")).toEqual(["the request"]);
    expect(subtasksFrom(Array.from({ length: 150 }, (_, i) => `line ${i}`).join("\n"), "r")).toHaveLength(100);
  });
});
