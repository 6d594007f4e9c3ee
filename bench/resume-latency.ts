/**
 * resume-latency: from a resume request (POST /v1/threads/{id}/runs with
 * resume_from_checkpoint_id and expected_state_version, right after a Stop) to the first
 * message.delta of the new run reaching an SSE client, over a real server.
 */
import { join } from "node:path";
import type { RunEvent } from "../src/core/index.js";
import { createDemoModel, silentLogger } from "../src/runtime/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { readSseEvents } from "../src/stream/index.js";
import type { Benchmark, BenchmarkResult } from "./benchmark.js";
import { compared } from "./benchmark.js";
import { createTempDir } from "./bench-support.js";
import { percentile, round, summarize } from "./statistics.js";

interface Answer {
  thread_id: string;
  run_id: string;
  status: string;
  resume_checkpoint_id: string;
  accepted_state_version: number;
}

const WARMUP = 10;
const MEASURED = 120;

export const resumeLatency: Benchmark = {
  name: "resume-latency",
  summary: "ms from a resume request after a Stop to the new run's first delta at an SSE client, vs a plain new run on an idle thread",
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("resume");
    const tidemark = await startTidemark({
      dbPath: join(temp.dir, "resume.db"),
      port: 0,
      model: createDemoModel({ wordsPerSecond: 0, wordCount: 2_000 }),
      logger: silentLogger,
    });
    /** The JSON answer of a POST: the fields read here, from the wire shapes of DESIGN §8. */
    const post = async (path: string, body: unknown): Promise<Answer> => {
      const response = await fetch(`${tidemark.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return (await response.json()) as Answer;
    };
    /** Resolves at the first delta of `runId` (or undefined if the stream ends without one). */
    const firstDelta = async (runId: string): Promise<number | undefined> => {
      const controller = new AbortController();
      const response = await fetch(`${tidemark.url}/v1/runs/${runId}/events`, { signal: controller.signal });
      try {
        for await (const message of readSseEvents(response.body!, { signal: controller.signal })) {
          if ((JSON.parse(message.data) as RunEvent).type === "message.delta") return performance.now();
        }
        return undefined;
      } finally {
        controller.abort();
      }
    };
    const resumed: number[] = [];
    const fresh: number[] = [];
    try {
      for (let index = 0; index < WARMUP + MEASURED; index++) {
        // A plain run on a fresh thread: the baseline.
        const thread = await post("/v1/threads", {});
        const plainStart = performance.now();
        const plain = await post(`/v1/threads/${thread.thread_id}/runs`, { input: { role: "user", content: "tell me a story" } });
        const plainAt = await firstDelta(plain.run_id);
        const cancel = await post(`/v1/runs/${plain.run_id}/cancel?wait=5000`, {});
        if (cancel.status !== "cancelled" || plainAt === undefined) throw new Error(`unexpected: ${JSON.stringify(cancel)}`);
        // Resume from the saved point.
        const resumeStart = performance.now();
        const run = await post(`/v1/threads/${thread.thread_id}/runs`, {
          input: { role: "user", content: "go on" },
          resume_from_checkpoint_id: cancel.resume_checkpoint_id,
          expected_state_version: cancel.accepted_state_version,
        });
        const resumedAt = await firstDelta(run.run_id);
        await post(`/v1/runs/${run.run_id}/cancel?wait=5000`, {});
        if (resumedAt === undefined) throw new Error("the resumed run streamed nothing");
        if (index < WARMUP) continue;
        fresh.push(plainAt - plainStart);
        resumed.push(resumedAt - resumeStart);
      }
      log(`resume-latency: ${MEASURED} resumes measured`);
    } finally {
      await tidemark.close();
      temp.remove();
    }
    const baseline = { label: "new run → first delta p50", value: round(percentile(fresh, 50)) };
    return {
      figures: [
        { label: "new run on a fresh thread → first delta p50", value: round(percentile(fresh, 50)), unit: "ms" },
        compared({ label: "resume after Stop → first delta p50", value: round(percentile(resumed, 50)), unit: "ms" }, baseline),
        { label: "resume after Stop → first delta p99", value: round(percentile(resumed, 99)), unit: "ms" },
      ],
      details: { runs: MEASURED, resumedMs: summarize(resumed), freshMs: summarize(fresh) },
    };
  },
};
