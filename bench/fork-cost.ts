import { join } from "node:path";
import { createId } from "../src/core/index.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { createTempDir, openSizeInspector, startClaimedRun } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { median, round } from "./statistics.js";

const TENANT = "bench";
const SHORT_PREFIX = 10;
const LONG_PREFIX = 10_000;
const FORKS = 200;
const READS = 500;
const PAGE = 50;
/** Messages each measured branch publishes itself: a page of 50 holds 5 of the prefix and crosses the fork point, whatever its length. */
const OWN_MESSAGES = 45;
const REPETITIONS = 3;
const CONTENT = "A message of the shared prefix. ".repeat(12);

/** What one prefix length costs: per fork, and per read of a branch's last page. */
interface PrefixCost {
  forkMicros: number;
  forkPageBytes: number;
  forkPayloadBytes: number;
  readMicros: number;
}

/** One run on `threadId` that publishes `count` messages in all (its input included), then completes. */
async function grow(store: Store, threadId: string, count: number): Promise<void> {
  const run = await startClaimedRun(store, TENANT, threadId, CONTENT);
  for (let index = 1; index < count; index++) {
    const result = await store.publishMessage({
      tenantId: TENANT,
      runId: run.runId,
      messageId: createId("msg"),
      checkpointId: createId("cp"),
      role: "assistant",
      content: CONTENT,
      completedStepId: `model-${index}`,
      stats: { llmCallCount: 1 },
      complete: index === count - 1,
      now: Date.now(),
    });
    if (result.kind !== "published") throw new Error("publish was rejected");
  }
}

async function fork(store: Store, threadId: string, checkpointId: string): Promise<string> {
  const result = await store.forkThread({
    tenantId: TENANT,
    sourceThreadId: threadId,
    fromCheckpointId: checkpointId,
    threadId: createId("thr"),
    checkpointId: createId("cp"),
    metadata: {},
    now: Date.now(),
  });
  if (result.kind !== "forked") throw new Error(`forkThread answered ${result.kind}`);
  return result.thread.threadId;
}

/** A source thread of `prefix` messages on a fresh file: `FORKS` forks of its head, then page reads of one branch. */
async function measure(prefix: number): Promise<PrefixCost> {
  const temp = createTempDir("fork");
  const path = join(temp.dir, "fork.db");
  const store = createSqliteStore({ path });
  const inspector = openSizeInspector(path);
  try {
    const source = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: Date.now() });
    await grow(store, source.threadId, prefix);
    const head = (await store.getThread(TENANT, source.threadId))!.headCheckpointId;

    const usedBefore = inspector.usedBytes();
    const payloadBefore = inspector.payloadBytes();
    const forkTimes: number[] = [];
    let branch = "";
    for (let index = 0; index < FORKS; index++) {
      const start = performance.now();
      branch = await fork(store, source.threadId, head);
      forkTimes.push((performance.now() - start) * 1000);
    }
    const forkPageBytes = (inspector.usedBytes() - usedBefore) / FORKS;
    const forkPayloadBytes = (inspector.payloadBytes() - payloadBefore) / FORKS;

    await grow(store, branch, OWN_MESSAGES);
    const readTimes: number[] = [];
    for (let index = 0; index < READS; index++) {
      const start = performance.now();
      // What `GET /history?limit=50` reads: the last page, and the checkpoints of its span (for markers).
      const messages = await store.listMessages(TENANT, branch, { limit: PAGE });
      await store.listCheckpoints(TENANT, branch, { fromVersion: messages[0]!.stateVersion });
      readTimes.push((performance.now() - start) * 1000);
      if (messages.length !== PAGE) throw new Error(`page of ${messages.length}, not ${PAGE}`);
    }
    return { forkMicros: median(forkTimes), forkPageBytes, forkPayloadBytes, readMicros: median(readTimes) };
  } finally {
    inspector.close();
    await store.close();
    temp.remove();
  }
}

const ratioFigure = (label: string, unit: string, long: number, short: number): Figure => {
  const figure = compared({ label, value: long, unit }, { label: `at ${SHORT_PREFIX}`, value: short });
  return { ...figure, target: "ratio ≤ 1.3", isMet: (figure.ratio ?? Number.NaN) <= 1.3 };
};

/** Fork cost and a branch's last-page read, with a prefix of 10 vs 10,000 messages. */
export const forkCost: Benchmark = {
  name: "fork-cost",
  summary: `forkThread (${FORKS} forks of the head) and a branch's last page (limit ${PAGE}) on SQLite: prefix of ${SHORT_PREFIX} vs ${LONG_PREFIX.toLocaleString("en")} messages`,
  async run({ log }): Promise<BenchmarkResult> {
    // Unmeasured first, so the short prefix does not pay for the JIT.
    await measure(1_000);
    const runs: { short: PrefixCost; long: PrefixCost }[] = [];
    for (let index = 0; index < REPETITIONS; index++) {
      runs.push({ short: await measure(SHORT_PREFIX), long: await measure(LONG_PREFIX) });
      log(`fork-cost: repetition ${index + 1}/${REPETITIONS}`);
    }
    const pick = (at: "short" | "long", field: keyof PrefixCost, digits: number) => round(median(runs.map((run) => run[at][field])), digits);
    const at = (n: number) => `prefix ${n.toLocaleString("en")}`;
    return {
      figures: [
        { label: `time per fork, ${at(SHORT_PREFIX)} (median)`, value: pick("short", "forkMicros", 1), unit: "µs" },
        ratioFigure(`time per fork, ${at(LONG_PREFIX)} (median)`, "µs", pick("long", "forkMicros", 1), pick("short", "forkMicros", 1)),
        { label: `allocated bytes per fork, ${at(SHORT_PREFIX)}`, value: pick("short", "forkPageBytes", 0), unit: "B" },
        ratioFigure(`allocated bytes per fork, ${at(LONG_PREFIX)}`, "B", pick("long", "forkPageBytes", 0), pick("short", "forkPageBytes", 0)),
        { label: `payload bytes per fork, ${at(SHORT_PREFIX)}`, value: pick("short", "forkPayloadBytes", 0), unit: "B" },
        ratioFigure(`payload bytes per fork, ${at(LONG_PREFIX)}`, "B", pick("long", "forkPayloadBytes", 0), pick("short", "forkPayloadBytes", 0)),
        { label: `branch history page (limit ${PAGE}), ${at(SHORT_PREFIX)} (median)`, value: pick("short", "readMicros", 1), unit: "µs" },
        ratioFigure(`branch history page (limit ${PAGE}), ${at(LONG_PREFIX)} (median)`, "µs", pick("long", "readMicros", 1), pick("short", "readMicros", 1)),
      ],
      details: {
        forks: FORKS,
        reads: READS,
        page: PAGE,
        ownMessagesPerBranch: OWN_MESSAGES,
        repetitions: REPETITIONS,
        note: "bytes from a read-only connection: (page_count − freelist_count) × page_size, and SUM(payload) FROM dbstat; a page read is listMessages({limit}) + listCheckpoints({fromVersion}), as GET /history?limit does",
        runs: runs.map((run) => ({
          short: Object.fromEntries(Object.entries(run.short).map(([key, value]) => [key, round(value, 1)])),
          long: Object.fromEntries(Object.entries(run.long).map(([key, value]) => [key, round(value, 1)])),
        })),
      },
    };
  },
};
