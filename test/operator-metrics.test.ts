/**
 * What operators read at `GET /metrics` (issue 17, item 5), each over a real server: queued runs
 * (on both stores), Stop latency as a histogram, provider chunks that came after a Stop, and lease
 * losses (a worker that could not renew fences its run, then recovers it once the lease expired,
 * on fake time).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatModel, Logger } from "../src/runtime/index.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { eventually } from "./support/eventually.js";
import { createFakeTime } from "./support/fake-timers.js";
import { startHarness, type Harness } from "./support/harness.js";
import { createHeldModel } from "./support/held-model.js";

const harnesses: Harness[] = [];
const cleanups: (() => void)[] = [];

afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    await h.expectNoViolations();
    await h.close();
  }
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function harnessWith(options: Parameters<typeof startHarness>[0]): Promise<Harness> {
  const h = await startHarness(options);
  harnesses.push(h);
  return h;
}

/** The value of one series of `/metrics` (0 when it is not there yet). */
async function metric(h: Harness, series: string): Promise<number> {
  const text = String((await h.api("/metrics")).body);
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/**
 * A provider that keeps sending after a Stop: its first chunk comes at once, each later one when
 * the test calls `next()`, and it never looks at its signal.
 */
function createDeafModel() {
  const waiting: (() => void)[] = [];
  let onWaiting: (() => void) | undefined;
  const model: ChatModel = {
    id: "deaf",
    async *stream() {
      yield { type: "text-delta", text: "First " };
      for (let index = 0; index < 3; index++) {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          onWaiting?.();
        });
        yield { type: "text-delta", text: `word${index} ` };
      }
      yield { type: "finish", finishReason: "stop" };
    },
  };
  return {
    model,
    /** Resolves once the provider waits to send its next chunk. */
    whenWaiting: () => new Promise<void>((resolve) => (waiting.length > 0 ? resolve() : (onWaiting = resolve))),
    next: () => waiting.shift()?.(),
  };
}

describe("operator metrics", () => {
  it.each(["sqlite", "postgres"] as const)("queued runs (%s): a run enqueued behind a busy thread is counted while it waits", async (storeKind) => {
    const held = createHeldModel();
    const h = await harnessWith({ storeKind, model: held.model });
    const threadId = await h.createThread();
    const first = await h.startRun(threadId, "hold the thread");
    await held.whenHeld(1);
    expect(await metric(h, 'tidemark_queued_runs{queue="waiting"}')).toBe(0);
    const queued = await h.startRun(threadId, "after it", { multitask: "enqueue" });
    expect(await metric(h, 'tidemark_queued_runs{queue="waiting"}')).toBe(1);
    // Every run here is claimed by this process as it is created: none waits for a worker.
    expect(await metric(h, 'tidemark_queued_runs{queue="unclaimed"}')).toBe(0);

    await h.api(`/v1/runs/${first.run_id}/cancel?wait=30000`, { method: "POST", json: {} });
    expect((await h.events(queued.run_id)).at(-1)?.type).toBe("run.completed");
    expect(await metric(h, 'tidemark_queued_runs{queue="waiting"}')).toBe(0);
  });

  it("Stop latency is a histogram: a Stop that ended its run is observed once", async () => {
    const held = createHeldModel();
    const h = await harnessWith({ model: held.model });
    const text = String((await h.api("/metrics")).body);
    expect(text).toContain("# TYPE tidemark_cancel_latency_seconds histogram");
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "hold on");
    await held.whenHeld(1);
    const stop = await h.api(`/v1/runs/${run.run_id}/cancel?wait=30000`, { method: "POST", json: {} });
    expect(stop.body.status).toBe("cancelled");
    // Observed once the terminal write was read back (in the background of the run's end).
    await eventually(async () => expect(await metric(h, "tidemark_cancel_latency_seconds_count")).toBe(1), { what: "the Stop's latency observed" });
    expect(await metric(h, 'tidemark_cancel_latency_seconds_bucket{le="+Inf"}')).toBe(1);
  });

  it("chunks after Stop: a provider that keeps sending after the Stop aborted its request is counted, and nothing of it is streamed", async () => {
    const deaf = createDeafModel();
    const h = await harnessWith({ model: deaf.model });
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "talk to me");
    await deaf.whenWaiting();
    const stop = await h.api(`/v1/runs/${run.run_id}/cancel`, { method: "POST", json: {} });
    expect(stop.status).toBe(202);
    expect(await metric(h, "tidemark_chunks_after_stop_total")).toBe(0);
    // The provider sends its next chunk anyway: it reaches the safe point after the Stop.
    deaf.next();
    const events = await h.events(run.run_id);
    expect(events.at(-1)?.type).toBe("run.cancelled");
    const stopAt = events.findIndex((event) => event.type === "run.cancel_requested");
    expect(events.slice(stopAt).some((event) => event.type === "message.delta")).toBe(false);
    expect(await metric(h, "tidemark_chunks_after_stop_total")).toBe(1);
  });

  it("lease losses (fake time): a worker whose renewals hang fences its run, then recovers it once the lease expired", async () => {
    const leaseMs = 15_000;
    const time = createFakeTime();
    const dir = mkdtempSync(join(tmpdir(), "tidemark-metrics-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const renewals = { hang: false };
    const sqlite = createSqliteStore({ path: join(dir, "store.db") });
    const store = new Proxy(sqlite, {
      get(target, property) {
        if (property === "renewLeases" && renewals.hang) return () => new Promise<never>(() => undefined);
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }) as Store;
    const errors: string[] = [];
    const logger: Logger = { info: () => {}, warn: () => {}, error: (_data, message) => void errors.push(message) };
    const held = createHeldModel();
    const h = await harnessWith({ store, model: held.model, clock: time.clock, timers: time.timers, leaseMs, logger });
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "hold while the database goes away");
    await held.whenHeld(1);
    expect(await metric(h, 'tidemark_lease_losses_total{outcome="fenced"}')).toBe(0);

    // The database stops answering renewals: two thirds of the lease on, the run is let go of.
    renewals.hang = true;
    await time.advance(leaseMs - leaseMs / 3 + leaseMs / 12);
    expect(errors.some((message) => /self-fenced/.test(message))).toBe(true);
    expect(await metric(h, 'tidemark_lease_losses_total{outcome="fenced"}')).toBe(1);
    expect(await metric(h, 'tidemark_runs_ended_total{outcome="fenced"}')).toBe(1);

    // Once the lease expired, the recovery sweep takes the run over and applies its policy (fail).
    await time.advance(leaseMs);
    const recovered = await eventually(
      async () => {
        const current = await sqlite.getRun("local", run.run_id);
        expect(current?.status).toBe("failed");
        return current;
      },
      { what: "the fenced run to be recovered" },
    );
    expect(recovered?.failureReason).toBe("worker_lost");
    expect(await metric(h, 'tidemark_lease_losses_total{outcome="recovered"}')).toBe(1);
    expect(await metric(h, "tidemark_recoveries_total")).toBe(1);
  });
});
