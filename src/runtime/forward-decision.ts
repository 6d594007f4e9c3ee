/** An approval decided on an API process for a run another process executes: sent there, answered by the run's new status. */
import type { Cluster } from "./cluster.js";
import { TidemarkError, type Clock, type RunRecord } from "../core/index.js";
import type { Store } from "../store/index.js";
import { abortableDelay } from "../core/abortable-delay.js";

/** How long the worker holding the run has to act on the decision. */
const DECISION_TIMEOUT_MS = 10_000;

export async function forwardDecision(
  context: { store: Store; clock: Clock; cluster: Cluster },
  tenantId: string,
  runId: string,
  decision: "approved" | "rejected",
): Promise<RunRecord> {
  const run = await context.store.getRun(tenantId, runId);
  if (!run) throw new TidemarkError("run_not_found", "No such run.");
  const notInterrupted = (status: string) =>
    new TidemarkError("run_not_interrupted", "The run is not waiting for an approval.", { details: { status } });
  if (run.status !== "interrupted") throw notInterrupted(run.status);
  await context.cluster.sendControl({ kind: "decide", tenantId, runId, decision });
  const deadline = context.clock.now() + DECISION_TIMEOUT_MS;
  const waiter = new AbortController();
  try {
    while (context.clock.now() < deadline) {
      await abortableDelay(10, waiter.signal);
      const current = await context.store.getRun(tenantId, runId);
      if (current?.status === "running") return current;
      if (current && current.status !== "interrupted") throw notInterrupted(current.status);
    }
  } finally {
    waiter.abort();
  }
  throw new TidemarkError("worker_unavailable", "The worker holding the run did not act on the decision in time; try again.", {
    details: { run_status: "interrupted" },
  });
}
