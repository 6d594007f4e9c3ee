import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

// Runs in a worker thread with its own connection. A PASSIVE checkpoint never waits for readers
// or writers, so the main thread's commits go on while it copies the WAL back and fsyncs. SQLite
// starts the WAL over only when a write begins with every frame copied back, a moment steady
// writes never leave (a commit lands during every copy), so past `restartFrames` the worker
// makes it: PASSIVE passes back to back until one leaves little behind (what was written during
// the last), then a RESTART, which holds the write lock while it copies that little and waits
// for readers. A write transaction begun meanwhile waits for it; a RESTART that cannot have the
// locks within its short busy timeout (a reader holding an old snapshot: a backup, another
// process's check) gives up, and none is tried for the next `restartRetryTicks` ticks, so such a
// reader does not hold the writes up at every tick.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
const passive = () => db.pragma("wal_checkpoint(PASSIVE)")[0];
function restart(last) {
  for (let pass = 0; pass < workerData.maxCatchUpPasses; pass++) {
    const next = passive();
    const writtenMeanwhile = next.log - last.log;
    last = next;
    if (writtenMeanwhile <= workerData.catchUpFrames) break;
  }
  db.pragma("busy_timeout = " + workerData.restartBusyTimeoutMs);
  try {
    return db.pragma("wal_checkpoint(RESTART)")[0].busy === 0;
  } finally {
    db.pragma("busy_timeout = 5000");
  }
}
let ticksBeforeRestart = 0;
const timer = setInterval(() => {
  try {
    const startedAt = Date.now();
    const result = passive();
    let restarted = "none";
    if (ticksBeforeRestart > 0) ticksBeforeRestart--;
    else if (result.log >= workerData.restartFrames) {
      restarted = restart(result) ? "made" : "busy";
      if (restarted === "busy") ticksBeforeRestart = workerData.restartRetryTicks;
    }
    if (workerData.isReporting) parentPort.postMessage({ log: result.log, checkpointed: result.checkpointed, startedAt, restart: restarted });
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

/**
 * One checkpoint's result: frames in the WAL, how many of them are now in the database file, when
 * it began, and its RESTART: none tried, made (the next write starts the WAL over), or given up
 * because the locks stayed busy.
 */
export interface WalCheckpointProgress {
  log: number;
  checkpointed: number;
  startedAt: number;
  restart: "none" | "made" | "busy";
}

/** How the checkpointer runs. */
export interface WalCheckpointerOptions {
  /** How often it checkpoints, ms. */
  intervalMs: number;
  /** The WAL's length in frames from which a checkpoint also makes it start over (see WORKER_SOURCE). */
  restartFrames: number;
  onError: (message: string) => void;
  onCheckpoint?: (progress: WalCheckpointProgress) => void;
}

/** A background WAL checkpointer; `close()` stops it and closes its connection. */
export interface WalCheckpointer {
  close(): Promise<void>;
}

/**
 * How long a RESTART waits for the main thread's write transaction and for readers before it gives
 * up until the next tick: every write begun meanwhile waits too, so it is short.
 */
const RESTART_BUSY_TIMEOUT_MS = 50;
/** After a RESTART given up, how many ticks go by (PASSIVE only) before another is tried. */
const RESTART_RETRY_TICKS = 10;
/**
 * Before a RESTART, PASSIVE passes go on while the last one saw more than this many frames written
 * meanwhile, at most `MAX_CATCH_UP_PASSES` of them: a writer faster than the copy then waits for
 * the RESTART's longer copy instead of the WAL growing on.
 */
const CATCH_UP_FRAMES = 256;
const MAX_CATCH_UP_PASSES = 8;

/**
 * Moves SQLite's WAL checkpoints off the main thread. With automatic checkpoints, the commit that
 * crosses the threshold copies the WAL back and fsyncs inside the event loop (milliseconds), and
 * that commit may be a Stop's. With `wal_autocheckpoint = 0` on the main connection and this
 * worker checkpointing every `intervalMs`, no commit on the main thread ever fsyncs.
 */
export function startWalCheckpointer(path: string, options: WalCheckpointerOptions): WalCheckpointer {
  const { intervalMs, restartFrames, onError, onCheckpoint } = options;
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const isReporting = onCheckpoint !== undefined;
  const workerData = {
    path,
    driver,
    intervalMs,
    restartFrames,
    restartBusyTimeoutMs: RESTART_BUSY_TIMEOUT_MS,
    restartRetryTicks: RESTART_RETRY_TICKS,
    catchUpFrames: CATCH_UP_FRAMES,
    maxCatchUpPasses: MAX_CATCH_UP_PASSES,
    isReporting,
  };
  // None of the process's flags: its source is CommonJS, and `--input-type=module` (a script given
  // with -e or on stdin) would make it an ES module that cannot `require`, so no checkpoint ever ran.
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData, execArgv: [] });
  worker.unref();
  worker.on("message", (message: { error?: string } & Partial<WalCheckpointProgress>) => {
    if (message.error) onError(message.error);
    else if (message.log !== undefined && message.checkpointed !== undefined && message.startedAt !== undefined) {
      onCheckpoint?.({ log: message.log, checkpointed: message.checkpointed, startedAt: message.startedAt, restart: message.restart ?? "none" });
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
