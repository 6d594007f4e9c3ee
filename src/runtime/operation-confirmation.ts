import { createId, TidemarkError, type Clock } from "../core/index.js";
import type { Store } from "../store/index.js";
import type { Tool } from "../tools/tool.js";
import type { Logger } from "../core/logger.js";

/** What confirming operations needs from the runtime. */
export interface OperationConfirmationContext {
  store: Store;
  clock: Clock;
  logger: Logger;
  tools: ReadonlyMap<string, Tool>;
}

/** The user's confirmation of an operation whose outcome was unknown (a transition of its thread). */
export async function confirmOperation(
  context: OperationConfirmationContext,
  tenantId: string,
  threadId: string,
  opId: string,
  outcome: "committed" | "not_committed",
  result?: unknown,
) {
  const { store, clock } = context;
  const operation = await store.getOperation(tenantId, opId);
  if (!operation || operation.threadId !== threadId) throw new TidemarkError("operation_not_found", "No such operation on this thread.");
  if (operation.phase !== "outcome_unknown") {
    throw new TidemarkError("operation_not_confirmable", "Only an operation whose outcome is unknown can be confirmed.", {
      details: { phase: operation.phase },
    });
  }
  const confirmed = await store.confirmOperation({ tenantId, threadId, opId, outcome, result, checkpointId: createId("cp"), now: clock.now() });
  if (!confirmed) throw new TidemarkError("operation_not_confirmable", "The operation was confirmed meanwhile.");
  return confirmed;
}

/** Asks each tool with a `status` hook what happened to its operations of unknown outcome. */
export async function confirmUnknownOperations(context: OperationConfirmationContext, tenantId: string, threadId: string): Promise<void> {
  const { store, clock, logger, tools } = context;
  const unknown = (await store.listOperations(tenantId, threadId)).filter((operation) => operation.phase === "outcome_unknown");
  for (const operation of unknown) {
    const tool = tools.get(operation.toolName);
    if (tool?.effect !== "consequential" || !tool.status) continue;
    const status = await tool
      .status(operation.idempotencyKey, { tenantId, threadId, signal: AbortSignal.timeout(10_000) })
      .catch(() => ({ outcome: "unknown" as const }));
    if (status.outcome === "unknown") continue;
    await store.confirmOperation({
      tenantId,
      threadId,
      opId: operation.opId,
      outcome: status.outcome,
      result: status.outcome === "committed" ? status.result : undefined,
      checkpointId: createId("cp"),
      now: clock.now(),
    });
    logger.info(
      { run_id: operation.runId, thread_id: threadId, tenant_id: tenantId, op_id: operation.opId, tool: operation.toolName, outcome: status.outcome },
      "operation confirmed by its tool's status hook",
    );
  }
}
