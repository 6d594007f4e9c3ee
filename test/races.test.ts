import { afterAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { abortableDelay, type ChatModel, type ModelStreamPart } from "../src/runtime/index.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";
import { pausesMs, raceDelay, withSeededSchedule } from "./support/seeded-schedule.js";

/** A model whose last delta is followed by a pause the test controls: the window of race 1. */
function createGatedModel(words: number) {
  let release: () => void = () => {};
  let gate = new Promise<void>((resolve) => (release = resolve));
  const model: ChatModel = {
    id: "gated",
    async *stream(_request, { signal }): AsyncGenerator<ModelStreamPart> {
      for (let index = 0; index < words; index++) {
        await abortableDelay(0, signal);
        yield { type: "text-delta", text: `w${index} ` };
      }
      await new Promise<void>((resolve, reject) => {
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        void gate.then(resolve);
      });
      yield { type: "finish", finishReason: "stop" };
    },
  };
  return {
    model,
    release: () => release(),
    reset: () => {
      gate = new Promise<void>((resolve) => (release = resolve));
    },
  };
}

describe("race 1: cancel while the last delta is already on the network", () => {
  const gated = createGatedModel(8);
  let h: Harness;
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("a cancel accepted after the last delta means the answer is never published", async () => {
    h = await startHarness({ model: gated.model });
    for (let round = 0; round < 10; round++) {
      gated.reset();
      const threadId = await h.createThread();
      const run = await h.startRun(threadId);
      const seen = await h.events(run.run_id, { until: (event) => event.type === "message.delta" && event.text === "w7 " });
      const cancel = await h.api(`/v1/runs/${run.run_id}/cancel`, { method: "POST" });
      // The generation finishes a moment after the cancel was accepted: that late output must not publish.
      gated.release();
      expect(cancel.status).toBe(202);
      const all = await h.events(run.run_id, { lastEventId: seen.at(-1)!.seq });
      expect(all.at(-1)!.type).toBe("run.cancelled");
      expect(all.map((event) => event.type)).not.toContain("message.published");
      const history = await h.api(`/v1/threads/${threadId}/history`);
      expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(["user"]);
      expect((await h.api(`/v1/runs/${run.run_id}`)).body).toMatchObject({ status: "cancelled", published_message_id: null });
    }
  });

  it("when the completion commits first, the cancel truthfully says it was too late", async () => {
    gated.reset();
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    await h.events(run.run_id, { until: (event) => event.type === "message.delta" && event.text === "w7 " });
    gated.release();
    const events = await h.events(run.run_id, { after: 0 });
    expect(events.at(-1)!.type).toBe("run.completed");
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel`, { method: "POST" });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ status: "completed", already_terminal: true });
    expect(cancel.body.published_message_id).toEqual(expect.any(String));
  });
});

describe("cancel racing completion, many times with seeded random timing", () => {
  let h: Harness;
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("exactly one of them wins, and a cancelled run never publishes", async () => {
    h = await startHarness({ demo: { wordsPerSecond: 0, wordCount: 1500 } });
    const rounds = 120;
    // Where each round's cancel lands, drawn from the seed (a failure prints it; TIDEMARK_SEED replays).
    await withSeededSchedule(pausesMs(rounds, 12), async (pauses) => {
      const outcomes = { cancelled: 0, completed: 0 };
      for (const [round, pause] of pauses.entries()) {
        const threadId = await h.createThread();
        const run = await h.startRun(threadId, `round ${round}`);
        // Early and late rounds pin both outcomes; the rest land anywhere in between.
        if (round % 10 === 9) await h.events(run.run_id);
        else if (round % 10 !== 0) await raceDelay(pause);
        const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST" });
        expect(cancel.status).toBeLessThan(300);
        const status = (await h.api(`/v1/runs/${run.run_id}`)).body;
        const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
        const assistant = history.messages.filter((message: { role: string }) => message.role === "assistant");
        const events: RunEvent[] = await h.events(run.run_id, { after: 0 });
        const types = events.map((event) => event.type);
        expect(types.filter((type) => type.startsWith("run.") && ["run.completed", "run.cancelled", "run.failed"].includes(type))).toHaveLength(1);
        if (status.status === "cancelled") {
          outcomes.cancelled++;
          expect(cancel.body.already_terminal).toBe(false);
          expect(assistant).toHaveLength(0);
          expect(types).not.toContain("message.published");
          expect(types.at(-1)).toBe("run.cancelled");
          const cancelledEvent = events.at(-1) as Extract<RunEvent, { type: "run.cancelled" }>;
          expect(cancelledEvent.discarded_stream_chars).toBe(deltaText(events).length);
        } else {
          outcomes.completed++;
          expect(status.status).toBe("completed");
          expect(cancel.body).toMatchObject({ already_terminal: true, status: "completed" });
          expect(assistant).toHaveLength(1);
          expect(assistant[0].content).toBe(deltaText(events));
          expect(types).not.toContain("run.cancel_requested");
        }
      }
      expect(outcomes.cancelled).toBeGreaterThan(0);
      expect(outcomes.completed).toBeGreaterThan(0);
      expect(outcomes.cancelled + outcomes.completed).toBe(rounds);
    });
    // 120 rounds: a guard for a loaded machine, not a pace the test needs.
  }, 120_000);

  it("cancel is scoped to its run: concurrent runs on other threads are untouched", async () => {
    h ??= await startHarness({ demo: { wordsPerSecond: 0, wordCount: 24 } });
    const threads = await Promise.all(Array.from({ length: 6 }, () => h.createThread()));
    const runs = await Promise.all(threads.map((threadId) => h.startRun(threadId)));
    await h.api(`/v1/runs/${runs[0].run_id}/cancel?wait=5000`, { method: "POST" });
    const finals = await Promise.all(runs.slice(1).map((run) => h.events(run.run_id, { after: 0 })));
    for (const events of finals) expect(events.at(-1)!.type).toBe("run.completed");
  });
});
