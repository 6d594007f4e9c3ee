/**
 * ledger-overhead: what the operation ledger adds to a consequential commit. The same commit
 * function (the demo outbox's `send`, a real SQLite insert on its own connection) is called bare
 * and through the ledger (prepare with its checkpoint → begin commit → send → record outcome),
 * in alternating blocks; plus the rate of 1,000 sequential ledger commits.
 */
import { join } from "node:path";
import { createId } from "../src/core/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { createDemoOutbox } from "../src/tools/demo-outbox.js";
import type { Benchmark, BenchmarkResult } from "./benchmark.js";
import { compared } from "./benchmark.js";
import { commitThroughLedger, createTempDir, startClaimedRun } from "./bench-support.js";
import { median, round, summarize } from "./statistics.js";

const TENANT = "bench";
const BLOCKS = 10;
const PER_BLOCK = 100;
const RATE_COMMITS = 1_000;

export const ledgerOverhead: Benchmark = {
  name: "ledger-overhead",
  summary: "µs per consequential commit through the ledger vs the same commit function bare; rate of 1,000 sequential ledger commits",
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("ledger");
    const store = createSqliteStore({ path: join(temp.dir, "ledger.db") });
    const outbox = createDemoOutbox(join(temp.dir, "outbox.db"));
    const message = { to: "bench@example.com", subject: "bench", body: "x".repeat(200) };
    try {
      const thread = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: Date.now() });
      const runId = (await startClaimedRun(store, TENANT, thread.threadId, "bench")).runId;

      let sequence = 0;
      const bare = async (): Promise<number> => {
        const start = performance.now();
        await outbox.send({ ...message, idempotencyKey: `bare-${sequence++}` });
        return performance.now() - start;
      };
      const throughLedger = async (): Promise<number> => {
        const start = performance.now();
        const key = `ledger-${sequence++}`;
        const action = { tenantId: TENANT, threadId: thread.threadId, runId, toolCallId: `call_${sequence}`, idempotencyKey: key, input: message };
        await commitThroughLedger(store, action, () => outbox.send({ ...message, idempotencyKey: key }));
        return performance.now() - start;
      };

      // Warm-up, then alternating blocks so drift on a shared machine hits both alike.
      for (let index = 0; index < 100; index++) {
        await bare();
        await throughLedger();
      }
      const bareSamples: number[] = [];
      const ledgerSamples: number[] = [];
      for (let block = 0; block < BLOCKS; block++) {
        const first = block % 2 === 0 ? bare : throughLedger;
        const second = block % 2 === 0 ? throughLedger : bare;
        for (let index = 0; index < PER_BLOCK; index++) (first === bare ? bareSamples : ledgerSamples).push(await first());
        for (let index = 0; index < PER_BLOCK; index++) (second === bare ? bareSamples : ledgerSamples).push(await second());
      }
      log(`ledger-overhead: ${bareSamples.length} bare and ${ledgerSamples.length} ledger commits measured`);

      const rateStart = performance.now();
      for (let index = 0; index < RATE_COMMITS; index++) await throughLedger();
      const rateSeconds = (performance.now() - rateStart) / 1000;
      log(`ledger-overhead: ${RATE_COMMITS} sequential ledger commits in ${round(rateSeconds, 2)} s`);

      const bareMedian = median(bareSamples) * 1000;
      const ledgerMedian = median(ledgerSamples) * 1000;
      const bareBaseline = { label: "bare commit p50", value: round(bareMedian, 1) };
      return {
        figures: [
          { label: "bare commit function (outbox.send) p50", value: round(bareMedian, 1), unit: "µs" },
          compared({ label: "commit through the ledger p50", value: round(ledgerMedian, 1), unit: "µs" }, bareBaseline),
          { label: "ledger overhead per commit (p50 difference)", value: round(ledgerMedian - bareMedian, 1), unit: "µs" },
          { label: `rate of ${RATE_COMMITS} sequential ledger commits`, value: round(RATE_COMMITS / rateSeconds, 0), unit: "commits/s" },
        ],
        details: {
          blocks: BLOCKS,
          perBlock: PER_BLOCK,
          bareMs: summarize(bareSamples),
          ledgerMs: summarize(ledgerSamples),
          rateSeconds,
          note: "ledger path = prepareOperation (with its checkpoint and thread version) + beginCommit + send + finishOperation",
        },
      };
    } finally {
      outbox.close();
      await store.close();
      temp.remove();
    }
  },
};
