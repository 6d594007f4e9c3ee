import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentDefinitionError } from "../agents/agent-definition-error.js";
import { defineAgent } from "../agents/define-agent.js";
import { ConfigurationError } from "../core/index.js";
import { defineTool } from "../tools/tool.js";
import { checkConfig } from "./check-config.js";

const agent = (name: string) => defineAgent({ name, steps: () => [] });
const readTool = (name: string) => defineTool({ name, description: "reads", input: z.object({}), effect: "none", execute: async () => "ok" });

describe("checkConfig", () => {
  it("returns a config of agents, and of tools when there are some", () => {
    const compare = agent("compare");
    expect(checkConfig({ agents: [compare] })).toEqual({ agents: [compare] });
    const lookup = readTool("lookup");
    expect(checkConfig({ agents: [], tools: [lookup] })).toEqual({ agents: [], tools: [lookup] });
    const redactor = (text: string) => text.replace(/\d/g, "#");
    expect(checkConfig({ agents: [], redactor })).toEqual({ agents: [], redactor });
    expect(checkConfig({ agents: [], retention: { traceTtlMs: 1_000, fragmentTtlMs: Infinity } })).toEqual({ agents: [], retention: { traceTtlMs: 1_000, fragmentTtlMs: Infinity } });
  });

  it.each([
    ["a default export that is not an object", "compare", "its default export is a string, not { agents: [...] }"],
    ["an array instead of { agents }", [agent("a")], "its default export is an array, not { agents: [...] }"],
    ["no agents", {}, "agents must be an array of agents (defineAgent), not undefined"],
    ["agents that are not an array", { agents: agent("a") }, "agents must be an array of agents (defineAgent), not an object"],
    ["an agent that is not an object (a wrong import)", { agents: [agent("a"), undefined] }, "agents[1] is undefined, not an agent (defineAgent)"],
    ["a setting it does not know", { agents: [], agent: [] }, "\"agent\" is not a config setting (a config holds agents, tools, a redactor and retention)"],
    ["a redactor that is not a function", { agents: [], redactor: "default" }, "redactor must be a function (text) => text, not a string"],
    ["retention that is not an object", { agents: [], retention: 5 }, "retention must be an object such as { traceTtlMs: 604800000 }, not a number"],
    ["a retention layer it does not know", { agents: [], retention: { eventTtlMs: 1 } }, "retention.eventTtlMs is not a retention setting (traceTtlMs, runDetailTtlMs, fragmentTtlMs, operationTtlMs)"],
    ["a negative retention", { agents: [], retention: { traceTtlMs: -1 } }, "retention.traceTtlMs must be a number of milliseconds of at least 0, or Infinity"],
    ["tools that are not an array", { agents: [], tools: readTool("t") }, "tools must be an array of tools (defineTool), not an object"],
    ["a tool without a name", { agents: [], tools: [{ description: "x" }] }, "tools[0] has no name"],
    ["a tool without a zod input", { agents: [], tools: [{ ...readTool("t"), input: {} }] }, "tool \"t\": input must be a zod schema"],
    ["a tool with an unknown effect", { agents: [], tools: [{ ...readTool("t"), effect: "maybe" }] }, "tool \"t\": effect must be none, idempotent or consequential"],
    ["a read tool without execute", { agents: [], tools: [{ ...readTool("t"), execute: undefined }] }, "tool \"t\": a tool whose effect is none needs execute()"],
    [
      "a consequential tool without an approval",
      { agents: [], tools: [{ name: "send", description: "sends", input: z.object({}), effect: "consequential", idempotencyKey: () => "k", commit: async () => "ok" }] },
      "tool \"send\": approval must be required or never",
    ],
    ["two tools of one name", { agents: [], tools: [readTool("t"), readTool("t")] }, "two tools are named \"t\""],
  ])("refuses %s with a ConfigurationError", (_case, exported, message) => {
    const error = catchError(() => checkConfig(exported));
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(message);
  });

  it.each([
    ["an agent with a bad name", { agents: [{ name: "Compare", steps: () => [] }] }, "agent \"Compare\": an agent's name must be 1–64 lower-case letters, digits, '-' or '_'"],
    ["an agent without steps", { agents: [{ name: "compare" }] }, "agent \"compare\": an agent needs a steps(context) function"],
    ["two agents of one name", { agents: [agent("compare"), agent("compare")] }, "agent \"compare\": two agents have this name"],
  ])("refuses %s with an AgentDefinitionError", (_case, exported, message) => {
    const error = catchError(() => checkConfig(exported));
    expect(AgentDefinitionError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(message);
  });
});

function catchError(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return expect.unreachable("checkConfig did not throw");
}
