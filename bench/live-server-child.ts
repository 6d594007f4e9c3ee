/**
 * The server of the live-sessions benchmark, in a process of its own so that its memory and CPU
 * are its own: `node --expose-gc live-server-child.js <provider url> <cancel url> <db path>`. An
 * embedded Tidemark (SQLite, the lean OpenAI-compatible reader, up to 256 runs at once) on
 * 127.0.0.1; it tells its parent its URL over IPC, then answers `usage` (process.cpuUsage and
 * memory, after a full GC when asked). Warnings and errors go to stderr as JSON lines; SIGTERM or
 * the parent's exit closes it, and it exits within ten minutes in any case.
 */
import { createOpenAICompatibleModel, withRetries } from "../src/models/index.js";
import { createJsonLogger, type Logger } from "../src/runtime/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { collectGarbage } from "./collect-garbage.js";

/** What the parent asks. */
export type ServerChildRequest = { type: "usage"; ticket: number; gc?: boolean };

/** What the child says. */
export type ServerChildMessage =
  | { type: "ready"; url: string }
  | { type: "usage"; ticket: number; cpuMicros: number; rssBytes: number; heapUsedBytes: number; externalBytes: number };

/** Up to 256 runs at once: 200 sessions, each with its turn's run, fit in one process. */
const MAX_CONCURRENT_RUNS = 256;

const [providerUrl, cancelUrl, dbPath] = process.argv.slice(2) as [string, string, string];
const json = createJsonLogger();
const logger: Logger = { info: () => {}, warn: json.warn, error: json.error };
const model = withRetries(createOpenAICompatibleModel({ model: "bench", baseURL: providerUrl, cancel: { url: cancelUrl } }));
const tidemark = await startTidemark({ dbPath, port: 0, host: "127.0.0.1", model, logger, maxConcurrentRuns: MAX_CONCURRENT_RUNS });

const send = (message: ServerChildMessage): void => {
  if (process.connected) process.send!(message);
};

process.on("message", (request: ServerChildRequest) => {
  if (request.type !== "usage") return;
  if (request.gc) collectGarbage();
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  send({ type: "usage", ticket: request.ticket, cpuMicros: cpu.user + cpu.system, rssBytes: memory.rss, heapUsedBytes: memory.heapUsed, externalBytes: memory.external });
});

let isClosing = false;
async function close(): Promise<void> {
  if (isClosing) return;
  isClosing = true;
  await tidemark.close().catch((error: unknown) => json.error({ error: String(error) }, "the live-sessions server did not close cleanly"));
  process.exit(0);
}
process.once("SIGTERM", () => void close());
process.once("disconnect", () => void close());
setTimeout(() => process.exit(0), 600_000).unref();
send({ type: "ready", url: tidemark.url });
