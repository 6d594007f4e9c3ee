/**
 * The conversation in order: saved messages, where each Stop interrupted an answer, and each
 * external operation right after the tool call that asked for it (with its result), so the
 * story reads as it happened. Operations whose call is not in the loaded history come last.
 */
import type { HistoryMarker, MessageView, OperationView, PendingApproval } from "../../src/client/index.js";

type Interrupted = Extract<HistoryMarker, { type: "interrupted_response" }>;

/** One entry of the conversation. */
export type ConversationItem =
  | { kind: "message"; message: MessageView }
  | { kind: "interrupted"; marker: Interrupted }
  | { kind: "operation"; operation: OperationView; result: MessageView | null }
  | { kind: "approval"; approval: PendingApproval };

export interface ConversationSource {
  history: readonly MessageView[];
  markers: readonly HistoryMarker[];
  operations: readonly OperationView[];
  /** The approval the run waits for, if any (it may not be in `operations` yet). */
  pendingApproval: PendingApproval | null;
  /** The run whose stopped draft is on screen: the draft itself shows where it was cut, so its marker is not repeated. */
  draftRunId: string | null;
}

/** Orders `source` for display. */
export function conversationItems(source: ConversationSource): ConversationItem[] {
  const interrupted = source.markers.filter((marker): marker is Interrupted => marker.type === "interrupted_response" && marker.run_id !== source.draftRunId);
  const byCall = new Map(source.operations.map((operation) => [operation.tool_call_id, operation]));
  const results = new Map(source.history.filter((message) => message.role === "tool" && message.tool_call_id).map((message) => [message.tool_call_id!, message]));
  const shown = new Set<string>();
  const items: ConversationItem[] = [];
  let nextMarker = 0;
  const markersUpTo = (version: number): void => {
    while (nextMarker < interrupted.length && interrupted[nextMarker]!.state_version <= version) items.push({ kind: "interrupted", marker: interrupted[nextMarker++]! });
  };
  for (const message of source.history) {
    markersUpTo(message.state_version);
    // A tool result that belongs to an operation is shown in the operation's card.
    if (message.role === "tool" && message.tool_call_id && byCall.has(message.tool_call_id)) continue;
    items.push({ kind: "message", message });
    for (const call of message.tool_calls ?? []) {
      const operation = byCall.get(call.tool_call_id);
      if (!operation) continue;
      shown.add(operation.op_id);
      items.push({ kind: "operation", operation, result: results.get(call.tool_call_id) ?? null });
    }
  }
  markersUpTo(Number.POSITIVE_INFINITY);
  for (const operation of source.operations) {
    if (!shown.has(operation.op_id)) items.push({ kind: "operation", operation, result: results.get(operation.tool_call_id) ?? null });
  }
  const pending = source.pendingApproval;
  if (pending && !source.operations.some((operation) => operation.op_id === pending.opId)) items.push({ kind: "approval", approval: pending });
  return items;
}
