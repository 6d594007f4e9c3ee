import type { Store } from "../store/index.js";
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

// 2 and 7 need the operation ledger and tool calls; listing them keeps "not checked" apart from "clean".
const NOT_APPLICABLE = [2] as const;

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
  for await (const snapshot of store.scanThreads()) {
    // A whole-store scan can be long: stop between threads rather than finish unasked.
    signal?.throwIfAborted();
    report.threadsChecked += 1;
    report.runsChecked += snapshot.runs.length;
    report.messagesChecked += snapshot.messages.length;
    report.violations.push(...checkThread(snapshot));
  }
  return report;
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
