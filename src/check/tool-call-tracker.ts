/**
 * Invariant 7 (no assistant tool call in model context without an outcome), kept up to date as
 * messages are added and taken back, so that `tidemark check` reuses a shared prefix for every
 * branch instead of rebuilding each branch's model context from its root.
 *
 * The rule is `buildModelContext`'s, restated per tool call id: only published messages count; an
 * unanswered call gets a synthetic result, and a result is kept only after a call of its id. So a
 * call is left without an outcome exactly when its id has results and every one of them comes
 * before the id's first call. A property test holds this equal to `findOrphanToolCalls(buildModelContext(…))`.
 */
import { InvariantError, type MessageRecord } from "../core/index.js";

/** One published message's part in invariant 7: a tool call, or a tool result. */
export interface ToolEvent {
  kind: "call" | "result";
  toolCallId: string;
  /** The message's position in the lineage. */
  position: number;
  /** The message's state version (a fork point bounds a prefix by version). */
  stateVersion: number;
  /** The call's index in its message's tool calls (0 for a result). */
  index: number;
}

/** The tool calls and results of `messages`, in their order. */
export function toolEventsOf(messages: readonly MessageRecord[]): ToolEvent[] {
  const events: ToolEvent[] = [];
  for (const message of messages) {
    if (message.publicationStatus !== "published") continue;
    const at = { position: message.position, stateVersion: message.stateVersion };
    if (message.role === "assistant") {
      (message.toolCalls ?? []).forEach((call, index) => events.push({ kind: "call", toolCallId: call.toolCallId, index, ...at }));
    } else if (message.role === "tool" && message.toolCallId) {
      events.push({ kind: "result", toolCallId: message.toolCallId, index: 0, ...at });
    }
  }
  return events;
}

/** The calls and results applied so far, by tool call id; undo takes back the latest applied first. */
export class ToolCallTracker {
  readonly #calls = new Map<string, ToolEvent[]>();
  readonly #results = new Map<string, ToolEvent[]>();
  readonly #orphans = new Set<string>();

  apply(event: ToolEvent): void {
    const byId = event.kind === "call" ? this.#calls : this.#results;
    const list = byId.get(event.toolCallId);
    if (list) list.push(event);
    else byId.set(event.toolCallId, [event]);
    this.#refresh(event.toolCallId);
  }

  /** Takes back `event`, which must be the latest applied event of its kind and id. */
  undo(event: ToolEvent): void {
    const byId = event.kind === "call" ? this.#calls : this.#results;
    const list = byId.get(event.toolCallId);
    if (list?.at(-1) !== event) throw new InvariantError(`tool event ${event.toolCallId} is not the latest of its id`);
    list.pop();
    if (list.length === 0) byId.delete(event.toolCallId);
    this.#refresh(event.toolCallId);
  }

  /** Each call without an outcome in the model context, in context order (a call made twice, twice). */
  orphanToolCalls(): string[] {
    return [...this.#orphans]
      .flatMap((toolCallId) => this.#calls.get(toolCallId) ?? [])
      .sort((a, b) => a.position - b.position || a.index - b.index)
      .map((call) => call.toolCallId);
  }

  #refresh(toolCallId: string): void {
    const calls = this.#calls.get(toolCallId);
    const results = this.#results.get(toolCallId);
    const isOrphan =
      calls !== undefined &&
      results !== undefined &&
      Math.max(...results.map((result) => result.position)) < Math.min(...calls.map((call) => call.position));
    if (isOrphan) this.#orphans.add(toolCallId);
    else this.#orphans.delete(toolCallId);
  }
}
