/**
 * The server of the many-streams benchmark, in a process of its own so that its memory and CPU
 * are its own: `node --expose-gc many-streams-server.js <db path> <period ms> <max chunks>`. The
 * embedded product as `tidemark serve` starts it (SQLite, the runtime, the HTTP API on
 * 127.0.0.1; no API keys, so no rate limit), with the stamped model in place of the demo one and
 * the tenant's run and stream limits off. It answers
 * its parent over IPC; SIGTERM or the parent's exit closes it, and it exits within ten minutes
 * in any case.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createJsonLogger, type Logger } from "../src/runtime/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { absoluteNow } from "./absolute-clock.js";
import { collectGarbage } from "./collect-garbage.js";
import { SharedPacer } from "./shared-pacer.js";
import { createStampedModel } from "./stamped-model.js";

/** What the parent asks. */
export type ManyStreamsServerRequest = { type: "usage"; gc?: boolean } | { type: "ping" } | { type: "finish" };

/** What the server says. */
export type ManyStreamsServerMessage =
  | { type: "ready"; url: string }
  | { type: "pong"; at: number }
  | { type: "finishing" }
  | {
      type: "usage";
      cpuMicros: number;
      rssBytes: number;
      heapUsedBytes: number;
      heapTotalBytes: number;
      externalBytes: number;
      chunksWritten: number;
      buffers: number;
      /** The event loop's delay since the last usage answer, ms. */
      loopDelayP99Ms: number;
      loopDelayMaxMs: number;
    };

/**
 * The tenant's run limits off: with them, each create counts the tenant's unfinished runs, which
 * costs O(runs) (some 2 ms at 5,000) and would make this a benchmark of creates, not of streams.
 */
const NO_LIMIT = Number.POSITIVE_INFINITY;
/** Slots per period: 10 ms apart at one chunk a second. */
const SLOTS = 100;

const [dbPath, periodText, maxChunksText] = process.argv.slice(2) as [string, string, string];
const json = createJsonLogger();
const logger: Logger = { info: () => {}, warn: json.warn, error: json.error };
const pacer = new SharedPacer(Number(periodText), SLOTS);
const model = createStampedModel(pacer, Number(maxChunksText));
const tidemark = await startTidemark({
  dbPath,
  port: 0,
  host: "127.0.0.1",
  model,
  logger,
  limits: { maxActiveRunsPerTenant: NO_LIMIT, maxQueuedRunsPerTenant: NO_LIMIT, maxStreamsPerTenant: NO_LIMIT },
});
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

const send = (message: ManyStreamsServerMessage): void => {
  if (process.connected) process.send!(message);
};

process.on("message", (request: ManyStreamsServerRequest) => {
  if (request.type === "ping") return send({ type: "pong", at: absoluteNow() });
  if (request.type === "finish") {
    model.finishAll();
    return send({ type: "finishing" });
  }
  if (request.gc) collectGarbage();
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  send({
    type: "usage",
    cpuMicros: cpu.user + cpu.system,
    rssBytes: memory.rss,
    heapUsedBytes: memory.heapUsed,
    heapTotalBytes: memory.heapTotal,
    externalBytes: memory.external,
    chunksWritten: model.chunksWritten,
    buffers: tidemark.runtime.hub.size,
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
    loopDelayMaxMs: loopDelay.max / 1e6,
  });
  loopDelay.reset();
});

let isClosing = false;
async function close(): Promise<void> {
  if (isClosing) return;
  isClosing = true;
  pacer.stop();
  await tidemark.close().catch((error: unknown) => json.error({ error: String(error) }, "the many-streams server did not close cleanly"));
  process.exit(0);
}
process.once("SIGTERM", () => void close());
process.once("disconnect", () => void close());
setTimeout(() => process.exit(0), 600_000).unref();
send({ type: "ready", url: tidemark.url });
