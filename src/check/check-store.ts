import type { OperationRecord } from "../core/index.js";
import type { Store, ThreadSnapshot } from "../store/index.js";
import { checkThread, type Violation } from "./check-thread.js";
import { DEFAULT_STALE_AFTER_MS, findStaleRuns, type StaleRun } from "./find-stale-runs.js";
import { LineageWalker } from "./lineage-walker.js";

/** What `tidemark check` found in one store. */
export interface CheckReport {
  threadsChecked: number;
  runsChecked: number;
  messagesChecked: number;
  violations: Violation[];
  /** Unfinished runs no live worker holds: warnings, apart from the violations (no invariant is broken). */
  staleRuns: StaleRun[];
  /** Invariants (docs/invariants.md) this store holds no rows for yet, so they were not checked. */
  notApplicable: number[];
}

/** Options for {@link checkStore}. */
export interface CheckStoreOptions {
  signal?: AbortSignal;
  /** The time stale runs are measured against (default now). */
  now?: number;
  /** An unfinished run this long past its lease, or queued this long, is reported stale (default 10 minutes). */
  staleAfterMs?: number;
}

// Every invariant is checked today; the list stays so that a new one without rows reads "not checked", not "clean".
const NOT_APPLICABLE: readonly number[] = [];

/**
 * Checks every thread of `store` against the invariants of docs/invariants.md, and reports the
 * unfinished runs no live worker holds. Each thread's rows are read once: a branch reuses what its
 * ancestors' scan already holds (see lineage-walker.ts), so the cost is linear in the store's rows.
 *
 * @example
 * const report = await checkStore(createSqliteStore({ path: "tidemark.db", readOnly: true }));
 * console.log(formatCheckReport(report));
 */
export async function checkStore(store: Store, options: CheckStoreOptions = {}): Promise<CheckReport> {
  const { signal } = options;
  signal?.throwIfAborted();
  const stale = { now: options.now ?? Date.now(), staleAfterMs: options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS };
  const report: CheckReport = {
    threadsChecked: 0,
    runsChecked: 0,
    messagesChecked: 0,
    violations: [],
    staleRuns: [],
    notApplicable: [...NOT_APPLICABLE],
  };
  const lineages = new LineageWalker();
  // Invariant 2 across threads: the first operation seen for each tenant and key.
  const keys = new Map<string, OperationRecord>();
  for await (const snapshot of store.scanThreads()) {
    // A whole-store scan can be long: stop between threads rather than finish unasked.
    signal?.throwIfAborted();
    report.threadsChecked += 1;
    report.runsChecked += snapshot.runs.length;
    report.messagesChecked += snapshot.messages.length;
    report.violations.push(...checkThread(snapshot, lineages.enter(snapshot)), ...checkSharedKeys(snapshot, keys));
    report.staleRuns.push(...findStaleRuns(snapshot, stale));
  }
  return report;
}

/** Invariant 2: an idempotency key of this thread already used by an operation of another thread of the tenant. */
function checkSharedKeys(snapshot: ThreadSnapshot, seen: Map<string, OperationRecord>): Violation[] {
  const found: Violation[] = [];
  for (const operation of snapshot.operations) {
    const key = JSON.stringify([operation.tenantId, operation.idempotencyKey]);
    const first = seen.get(key);
    if (!first) {
      seen.set(key, operation);
    } else if (first.threadId !== operation.threadId) {
      // Within one thread checkThread reports it already.
      found.push({
        invariant: 2,
        tenantId: operation.tenantId,
        threadId: operation.threadId,
        runId: operation.runId,
        operationId: operation.opId,
        detail:
          `operations ${first.opId} (thread ${first.threadId}) and ${operation.opId} ` +
          `share the idempotency key ${operation.idempotencyKey}`,
      });
    }
  }
  return found;
}

/** The report as text: one line per violation, one per stale run, then what was not checked, then a summary line. */
export function formatCheckReport(report: CheckReport): string {
  const lines = [
    ...report.violations.map((violation) => `invariant ${violation.invariant} ${violation.threadId}: ${violation.detail}`),
    ...report.staleRuns.map((run) => `stale run ${run.threadId}: ${run.detail}`),
  ];
  if (report.notApplicable.length > 0) {
    const numbers = report.notApplicable.join(", ");
    lines.push(`invariant${report.notApplicable.length === 1 ? "" : "s"} ${numbers}: not applicable to this store yet`);
  }
  lines.push(
    `${count(report.violations.length, "violation")} in ${count(report.threadsChecked, "thread")} ` +
      `(${count(report.runsChecked, "run")}, ${count(report.messagesChecked, "message")})` +
      (report.staleRuns.length > 0 ? `; ${count(report.staleRuns.length, "stale run")} (a warning, not a violation)` : ""),
  );
  return lines.join("\n");
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
