import { isTerminalStatus, type RunRecord } from "../../../core/index.js";
import type { Runtime } from "../../../runtime/index.js";

/** How long one wait lasts before the client's connection is looked at again. */
const WAIT_SLICE_MS = 10_000;

/**
 * The run once it is terminal or paused for an approval (LangGraph's `interrupted`: the run is
 * done until a `command` resumes it, so `join` and `runs/wait` answer), or as it stands when
 * `signal` aborts (the client went away) or `timeoutMs` ran out. Waits in slices so that an
 * abandoned wait is dropped soon, and a pause is seen within a slice.
 */
export async function waitForRun(runtime: Runtime, run: RunRecord, signal: AbortSignal, timeoutMs = Number.POSITIVE_INFINITY): Promise<RunRecord> {
  let current = run;
  const isDone = (record: RunRecord) => isTerminalStatus(record.status) || record.status === "interrupted";
  // Each slice lasts its full length unless the run ends in it: counting them keeps the time.
  for (let remainingMs = timeoutMs; !isDone(current) && !signal.aborted && remainingMs > 0; remainingMs -= WAIT_SLICE_MS) {
    const sliceMs = Math.min(WAIT_SLICE_MS, remainingMs);
    current = (await abortable(runtime.waitForTerminal(run.tenantId, run.runId, sliceMs), signal)) ?? current;
  }
  return current;
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error as Error);
      },
    );
  });
}
