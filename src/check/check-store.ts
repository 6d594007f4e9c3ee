import type { OperationRecord } from "../core/index.js";
import type { Store, ThreadSnapshot } from "../store/index.js";
import { checkThread, type Violation } from "./check-thread.js";

/** What `tidemark check` found in one store. */
export interface CheckReport {
  threadsChecked: number;
  runsChecked: number;
  messagesChecked: number;
  violations: Violation[];
  /** Invariants (DESIGN §15) this store holds no rows for yet, so they were not checked. */
  notApplicable: number[];
}

/** Options for {@link checkStore}. */
export interface CheckStoreOptions {
  signal?: AbortSignal;
}

// Every invariant is checked today; the list stays so that a new one without rows reads "not checked", not "clean".
const NOT_APPLICABLE: readonly number[] = [];

/**
 * Checks every thread of `store` against the invariants of DESIGN §15.
 *
 * @example
 * const report = await checkStore(createSqliteStore({ path: "tidemark.db" }));
 * console.log(formatCheckReport(report));
 */
export async function checkStore(store: Store, options: CheckStoreOptions = {}): Promise<CheckReport> {
  const { signal } = options;
  signal?.throwIfAborted();
  const report: CheckReport = {
    threadsChecked: 0,
    runsChecked: 0,
    messagesChecked: 0,
    violations: [],
    notApplicable: [...NOT_APPLICABLE],
  };
  // Invariant 2 across threads: the first operation seen for each tenant and key.
  const keys = new Map<string, OperationRecord>();
  for await (const snapshot of store.scanThreads()) {
    // A whole-store scan can be long: stop between threads rather than finish unasked.
    signal?.throwIfAborted();
    report.threadsChecked += 1;
    report.runsChecked += snapshot.runs.length;
    report.messagesChecked += snapshot.messages.length;
    report.violations.push(...checkThread(snapshot), ...checkSharedKeys(snapshot, keys));
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

/** The report as text: one line per violation, then what was not checked, then a summary line. */
export function formatCheckReport(report: CheckReport): string {
  const lines = report.violations.map(
    (violation) => `invariant ${violation.invariant} ${violation.threadId}: ${violation.detail}`,
  );
  if (report.notApplicable.length > 0) {
    const numbers = report.notApplicable.join(", ");
    lines.push(`invariant${report.notApplicable.length === 1 ? "" : "s"} ${numbers}: not applicable to this store yet`);
  }
  lines.push(
    `${count(report.violations.length, "violation")} in ${count(report.threadsChecked, "thread")} ` +
      `(${count(report.runsChecked, "run")}, ${count(report.messagesChecked, "message")})`,
  );
  return lines.join("\n");
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
