/**
 * The warning half of `tidemark check`: unfinished runs nobody is working on. A run whose lease
 * expired long ago, or a queued run no worker took, breaks no invariant (recovery takes it over
 * at the next start), but on a store that is being served it means recovery is not happening.
 */
import { isTerminalStatus, type RunRecord } from "../core/index.js";
import type { ThreadSnapshot } from "../store/index.js";

/** How long past its lease (or its queueing) an unfinished run may be before it is reported: 10 minutes. */
export const DEFAULT_STALE_AFTER_MS = 10 * 60 * 1000;

/** An unfinished run that no live worker holds, reported apart from the violations. */
export interface StaleRun {
  tenantId: string;
  threadId: string;
  runId: string;
  status: RunRecord["status"];
  detail: string;
}

/** Options for {@link findStaleRuns}. */
export interface StaleRunOptions {
  /** The time to measure against (ms since the epoch). */
  now: number;
  /** A run is stale once this long past its lease or its queueing. */
  staleAfterMs: number;
}

/** The thread's unfinished runs whose lease expired, or whose queueing began, more than `staleAfterMs` ago. */
export function findStaleRuns(snapshot: ThreadSnapshot, options: StaleRunOptions): StaleRun[] {
  const { now, staleAfterMs } = options;
  const unfinished = snapshot.runs.filter((run) => !isTerminalStatus(run.status));
  // A waiting run starts when the run ahead of it ends: it is stuck only if none is ahead.
  const isAnyAhead = unfinished.some((run) => !run.isWaiting);
  const found: StaleRun[] = [];
  for (const run of unfinished) {
    const reason = staleReason(run, isAnyAhead, now, staleAfterMs);
    if (reason) {
      const { tenantId, threadId } = snapshot.thread;
      found.push({ tenantId, threadId, runId: run.runId, status: run.status, detail: `run ${run.runId} is ${run.status}: ${reason}` });
    }
  }
  return found;
}

function staleReason(run: RunRecord, isAnyAhead: boolean, now: number, staleAfterMs: number): string | undefined {
  const isLong = (since: number): boolean => since < now - staleAfterMs;
  if (run.leaseExpiresAt !== null) {
    // A released lease is stored as expired at 0: handed back at a drain, for the next worker.
    if (run.leaseExpiresAt === 0 && run.leaseOwner === null) return "its worker handed it back and no worker has taken it since";
    if (isLong(run.leaseExpiresAt)) return `its lease expired ${age(now - run.leaseExpiresAt)} ago (${iso(run.leaseExpiresAt)})`;
    return undefined;
  }
  if (run.status !== "queued" || !isLong(run.createdAt)) return undefined;
  if (!run.isWaiting) return `queued ${age(now - run.createdAt)} ago (${iso(run.createdAt)}) and no worker has taken it`;
  if (!isAnyAhead) return `waiting since ${iso(run.createdAt)} behind no run`;
  return undefined;
}

function iso(time: number): string {
  return new Date(time).toISOString();
}

/** A duration in its largest whole unit: "3 h", "12 min", "40 s". */
function age(ms: number): string {
  const units: [number, string][] = [
    [24 * 60 * 60 * 1000, "d"],
    [60 * 60 * 1000, "h"],
    [60 * 1000, "min"],
  ];
  for (const [size, unit] of units) if (ms >= size) return `${Math.floor(ms / size)} ${unit}`;
  return `${Math.floor(ms / 1000)} s`;
}
