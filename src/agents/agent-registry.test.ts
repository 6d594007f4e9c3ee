import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentDefinitionError } from "./agent-definition-error.js";
import { AgentRegistry } from "./agent-registry.js";
import { builtInAgents, withBuiltInAgents } from "./built-in-agents.js";
import { defineAgent } from "./define-agent.js";

const echo = defineAgent({
  name: "echo",
  description: "Says it back.",
  configSchema: z.object({ times: z.number().int().min(1).default(1) }).strict(),
  steps: () => [],
});

describe("defineAgent", () => {
  it("refuses an agent that cannot be deployed, naming it", () => {
    expect(() => defineAgent({ name: "Bad Name", steps: () => [] })).toThrow(AgentDefinitionError);
    expect(() => defineAgent({ name: "", steps: () => [] })).toThrow(/1–64 lower-case/);
    expect(() => defineAgent({ name: "x".repeat(65), steps: () => [] })).toThrow(AgentDefinitionError);
    expect(() => defineAgent({ name: "nosteps" } as never)).toThrow(/steps\(context\)/);
    expect(() => defineAgent({ name: "badschema", configSchema: {} as never, steps: () => [] })).toThrow(/zod schema/);
    expect(defineAgent({ name: "ok_1-2", steps: () => [] }).name).toBe("ok_1-2");
  });
});

describe("AgentRegistry", () => {
  it("lists agents with their config JSON schema, and refuses two of one name", () => {
    const registry = new AgentRegistry([echo]);
    expect(registry.list()).toEqual([
      {
        name: "echo",
        description: "Says it back.",
        configSchema: expect.objectContaining({ type: "object", properties: { times: expect.objectContaining({ type: "integer", minimum: 1 }) } }),
      },
    ]);
    expect(() => new AgentRegistry([echo, echo])).toThrow(/two agents have this name/);
  });

  it("validates config with the agent's schema, filling defaults; absent config is {}", () => {
    const registry = new AgentRegistry([echo]);
    expect(registry.parseConfig(echo, undefined)).toEqual({ ok: true, config: { times: 1 } });
    expect(registry.parseConfig(echo, { times: 3 })).toEqual({ ok: true, config: { times: 3 } });
    const refused = registry.parseConfig(echo, { times: 0, extra: true });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.issues.map((issue) => issue.path).sort()).toEqual(["", "times"]);
  });

  it("refuses config for an agent that takes none", () => {
    const plain = defineAgent({ name: "plain", steps: () => [] });
    const registry = new AgentRegistry([plain]);
    expect(registry.parseConfig(plain, {})).toEqual({ ok: true, config: {} });
    expect(registry.parseConfig(plain, { a: 1 })).toMatchObject({ ok: false });
  });

  it("deploys the built-ins, and an agent of a built-in's name replaces it", () => {
    expect(builtInAgents().map((agent) => agent.name)).toEqual(["chat", "research"]);
    const myChat = defineAgent({ name: "chat", steps: () => [] });
    const agents = withBuiltInAgents([myChat, echo]);
    expect(agents.map((agent) => agent.name)).toEqual(["research", "chat", "echo"]);
    expect(new AgentRegistry(agents).get("chat")).toBe(myChat);
  });
});
