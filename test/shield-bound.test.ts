/**
 * `shield` has a bound (issue 13, item 3): a consequential tool whose commit hangs for ever no
 * longer keeps a stopped run `cancelling`, nor `close()` waiting, for ever. Once the configured
 * `shieldTimeoutMs` after the Stop ran out, the operation is recorded `outcome_unknown` and the
 * run ends. The tests wait for events (the commit entered, the terminal event, close returning),
 * never for wall time: the bound is small because nothing here sleeps on it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, type ChatModel, type Runtime } from "../src/runtime/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/index.js";
import { defineTool } from "../src/tools/index.js";

const TENANT = "local";

/** A model that asks for `send` once, then answers in words. */
const model: ChatModel = {
  id: "sender",
  async *stream(request) {
    if (!request.messages.some((message) => message.role === "tool")) {
      yield { type: "tool-call", toolCall: { toolCallId: "call-1", toolName: "send", input: JSON.stringify({ to: "ada" }) } };
    } else {
      yield { type: "text-delta", text: "Sent." };
    }
    yield { type: "finish", finishReason: "stop" };
  },
};

/** A consequential tool whose commit is handed over and then never answers, ignoring its signal. */
function createHangingSend() {
  let entered!: (signal: AbortSignal) => void;
  const whenCommitting = new Promise<AbortSignal>((resolve) => (entered = resolve));
  const tool = defineTool({
    name: "send",
    description: "Sends a message.",
    effect: "consequential",
    approval: "never",
    input: z.object({ to: z.string() }),
    idempotencyKey: (input) => `send:${input.to}`,
    commit: (_input, context) => {
      entered(context.signal);
      return new Promise<never>(() => undefined);
    },
  });
  return { tool, whenCommitting };
}

describe("a hung commit under a bounded shield", () => {
  const dir = mkdtempSync(join(tmpdir(), "tidemark-shield-bound-"));
  let store: Store | undefined;
  let runtime: Runtime | undefined;
  afterEach(async () => {
    await runtime?.close();
    await store?.close();
    runtime = undefined;
    store = undefined;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function startSending(file: string) {
    store = createSqliteStore({ path: join(dir, file) });
    const send = createHangingSend();
    runtime = createRuntime({ store, model, tools: [send.tool], shieldTimeoutMs: 50 });
    await runtime.start();
    const thread = await runtime.createThread(TENANT);
    const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: "send it" } });
    const commitSignal = await send.whenCommitting;
    return { store, runtime, run, thread, commitSignal };
  }

  it("a Stop ends the run cancelled, with the operation outcome_unknown, once the bound passed", async () => {
    const { store, runtime, run, thread, commitSignal } = await startSending("stop.db");
    const buffer = runtime.hub.get(TENANT, run.runId)!;

    const cancel = await runtime.cancelRun(TENANT, run.runId, "user_stop");
    // The commit is shielded: the Stop alone does not abort it.
    expect(commitSignal.aborted).toBe(false);
    expect(cancel.kind).toBe("accepted");
    const terminal = await buffer.whenTerminal();

    expect(commitSignal.reason).toMatchObject({ name: "ShieldTimeoutError", timeoutMs: 50 });
    expect(terminal).toMatchObject({ type: "run.cancelled", external_effects: [{ tool: "send", phase: "outcome_unknown" }] });
    expect((await store.getRun(TENANT, run.runId))?.status).toBe("cancelled");
    const operations = await store.listOperations(TENANT, thread.threadId);
    expect(operations).toHaveLength(1);
    expect(operations[0]).toMatchObject({ phase: "outcome_unknown", idempotencyKey: "send:ada" });
    expect(operations[0]!.error).toMatch(/outcome is unknown/);
    expect(buffer.eventsBetween(0, buffer.lastSeq).map((event) => event.type)).not.toContain("tool.committed");

    await runtime.close();
  });

  it("close() returns: the run is handed back, its operation outcome_unknown", async () => {
    const { store, runtime, run, thread } = await startSending("close.db");

    await runtime.close();

    expect(runtime.activeRunCount).toBe(0);
    expect((await store.getRun(TENANT, run.runId))?.status).toBe("queued");
    const operations = await store.listOperations(TENANT, thread.threadId);
    expect(operations.map((operation) => operation.phase)).toEqual(["outcome_unknown"]);
  });
});
