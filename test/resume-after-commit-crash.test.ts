/**
 * `recovery_policy: "resume"` after a crash during a consequential commit: before the resumed
 * attempt does anything, the tool's `status` hook is asked what became of the action, so the
 * model is told the truth ("committed before the stop") instead of "outcome unknown".
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createId } from "../src/core/index.js";
import { createRuntime, type ChatModel, type ModelMessage, type Runtime } from "../src/runtime/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/index.js";
import { defineTool } from "../src/tools/index.js";

const TENANT = "local";

describe("a resumed attempt after a crash mid-commit", () => {
  const dir = mkdtempSync(join(tmpdir(), "tidemark-resume-commit-"));
  let store: Store | undefined;
  let runtime: Runtime | undefined;
  afterEach(async () => {
    await runtime?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("asks the tool's status hook before the model sees the operation", async () => {
    store = createSqliteStore({ path: join(dir, "store.db") });
    const statusAsked: string[] = [];
    const sendTool = defineTool({
      name: "send",
      description: "Sends a message.",
      effect: "consequential",
      approval: "never",
      input: z.object({ to: z.string() }),
      idempotencyKey: (input) => `send:${input.to}`,
      commit: async () => ({ sent: true }),
      status: async (key) => {
        statusAsked.push(key);
        return { outcome: "committed", result: { sent: true, confirmed_by: "status" } };
      },
    });
    const requests: (readonly ModelMessage[])[] = [];
    const model: ChatModel = {
      id: "recorder",
      async *stream(request) {
        requests.push(request.messages);
        yield { type: "text-delta", text: "Done." };
        yield { type: "finish", finishReason: "stop" };
      },
    };

    // The crashed attempt, as the store holds it: the model asked for the tool, the commit was
    // handed over, and the process died before its result was recorded (the lease ran out).
    const thread = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: 1 });
    const created = await store.createRun({
      tenantId: TENANT,
      runId: createId("run"),
      threadId: thread.threadId,
      input: { role: "user", content: "send it" },
      inputMessageId: createId("msg"),
      checkpointId: createId("cp"),
      idempotencyKey: null,
      requestHash: "h",
      model: "recorder",
      onDisconnect: "continue",
      recoveryPolicy: "resume",
      expectedStateVersion: null,
      now: 2,
    });
    if (created.kind !== "created") throw new Error(created.kind);
    const { runId } = created.run;
    await store.claimRun({ tenantId: TENANT, runId, owner: "wrk_dead", leaseExpiresAt: 3, now: 2 });
    const call = { toolCallId: "call-1", toolName: "send", input: JSON.stringify({ to: "ada" }) };
    await store.publishMessage({
      tenantId: TENANT,
      runId,
      messageId: createId("msg"),
      checkpointId: createId("cp"),
      role: "assistant",
      content: "",
      toolCalls: [call],
      completedStepId: "model-1",
      stats: {},
      complete: false,
      now: 2,
    });
    const prepared = await store.prepareOperation({
      tenantId: TENANT,
      opId: createId("op"),
      threadId: thread.threadId,
      runId,
      toolName: "send",
      toolCallId: "call-1",
      idempotencyKey: "send:ada",
      input: call.input,
      preview: null,
      checkpointId: createId("cp"),
      now: 2,
    });
    if (prepared.kind !== "prepared") throw new Error(prepared.kind);
    expect((await store.beginCommit({ tenantId: TENANT, opId: prepared.operation.opId, runId, now: 2 })).kind).toBe("committing");

    runtime = createRuntime({ store, model, tools: [sendTool], leaseMs: 1_000 });
    await runtime.start();
    const buffer = runtime.hub.get(TENANT, runId) ?? (await runtime.openEvents(TENANT, (await store.getRun(TENANT, runId))!, 0));
    await buffer?.whenTerminal();

    expect(statusAsked).toEqual(["send:ada"]);
    expect((await store.getOperation(TENANT, prepared.operation.opId))?.phase).toBe("committed");
    const toolResults = requests.at(-1)!.filter((message) => message.role === "tool").map((message) => message.content);
    expect(toolResults).toHaveLength(1);
    expect(toolResults[0]).toContain("confirmed_by");
    expect(toolResults[0]).not.toContain("outcome unknown");
    expect((await store.getRun(TENANT, runId))?.status).toBe("completed");
  });
});
