import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

// Runs in a worker thread with its own connection. A PASSIVE checkpoint never waits for readers
// or writers, so the main thread's commits go on while it copies the WAL back and fsyncs.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
const timer = setInterval(() => {
  try {
    const startedAt = Date.now();
    const [result] = db.pragma("wal_checkpoint(PASSIVE)");
    if (workerData.isReporting) parentPort.postMessage({ log: result.log, checkpointed: result.checkpointed, startedAt });
  } catch (error) {
    parentPort.postMessage({ error: String(error) });
  }
}, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message !== "close") return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** One checkpoint's result: frames in the WAL, how many of them are now in the database file, and when it began. */
export interface WalCheckpointProgress {
  log: number;
  checkpointed: number;
  startedAt: number;
}

/** A background WAL checkpointer; `close()` stops it and closes its connection. */
export interface WalCheckpointer {
  close(): Promise<void>;
}

/**
 * Moves SQLite's WAL checkpoints off the main thread. With automatic checkpoints, the commit that
 * crosses the threshold copies the WAL back and fsyncs inside the event loop (milliseconds), and
 * that commit may be a Stop's. With `wal_autocheckpoint = 0` on the main connection and this
 * worker checkpointing every `intervalMs`, no commit on the main thread ever fsyncs.
 */
export function startWalCheckpointer(
  path: string,
  intervalMs: number,
  onError: (message: string) => void,
  onCheckpoint?: (progress: WalCheckpointProgress) => void,
): WalCheckpointer {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const isReporting = onCheckpoint !== undefined;
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driver, intervalMs, isReporting } });
  worker.unref();
  worker.on("message", (message: { error?: string } & Partial<WalCheckpointProgress>) => {
    if (message.error) onError(message.error);
    else if (message.log !== undefined && message.checkpointed !== undefined && message.startedAt !== undefined) {
      onCheckpoint?.({ log: message.log, checkpointed: message.checkpointed, startedAt: message.startedAt });
    }
  });
  worker.on("error", (error) => onError(String(error)));
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  return {
    async close() {
      // Unref'd while it runs, so it never keeps a process alive; ref'd while closing, so a
      // process whose last work is this close waits for it instead of exiting mid-await.
      worker.ref();
      worker.postMessage("close");
      await exited;
    },
  };
}
