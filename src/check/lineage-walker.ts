/**
 * What a branch inherits, for `tidemark check`, built once per thread however deep the forks go.
 *
 * A store's scan yields each branch after its parent, depth first (see `Store.scanThreads`). The
 * walker keeps the current chain of ancestors as a stack: each thread's own checkpoints are indexed
 * once when it is entered, and its tool calls are applied once to one {@link ToolCallTracker}; a
 * branch sees an ancestor's rows only up to its fork version. Moving to the next thread pops the
 * threads it does not descend from and takes back their tool calls, so each row is added and taken
 * back once: the work is linear in the store's rows, not in rows × fork depth.
 */
import type { CheckpointRecord } from "../core/index.js";
import type { ThreadSnapshot } from "../store/index.js";
import { ToolCallTracker, toolEventsOf, type ToolEvent } from "./tool-call-tracker.js";

/** A thread's view of its lineage: its own rows and its ancestors' up to each fork point. */
export interface ThreadLineage {
  /** A checkpoint of the lineage by id (its own first), or undefined if the thread cannot see one. */
  checkpoint(checkpointId: string): CheckpointRecord | undefined;
  /** Each tool call without an outcome in the thread's model context, in context order (invariant 7). */
  orphanToolCalls: string[];
}

/** One thread on the stack: what it adds to the lineage, and how much of it the thread below sees. */
interface Frame {
  tenantId: string;
  threadId: string;
  checkpoints: CheckpointRecord[];
  toolEvents: ToolEvent[];
  /** How many of `toolEvents` are applied to the tracker. */
  applied: number;
  /** The highest version of this thread the current thread sees (unbounded for the current thread itself). */
  visibleVersion: number;
}

/** Walks a store's threads in scan order and hands each its {@link ThreadLineage}. */
export class LineageWalker {
  readonly #stack: Frame[] = [];
  /** Checkpoints of the threads on the stack, by id (a list: a corrupted store may reuse an id). */
  readonly #checkpoints = new Map<string, { checkpoint: CheckpointRecord; frame: Frame }[]>();
  readonly #tracker = new ToolCallTracker();

  /** The lineage of `snapshot`'s thread; threads come in scan order, each branch after its parent. */
  enter(snapshot: ThreadSnapshot): ThreadLineage {
    const { tenantId, threadId, forkedFrom } = snapshot.thread;
    // Leave every thread this one does not descend from. A parent that is not on the stack (a
    // corrupted store) leaves an empty lineage, and the fork point is then reported missing.
    while (this.#stack.length > 0) {
      const top = this.#stack.at(-1)!;
      if (forkedFrom && top.tenantId === tenantId && top.threadId === forkedFrom.threadId) break;
      this.#pop();
    }
    const parent = this.#stack.at(-1);
    if (parent && forkedFrom) {
      parent.visibleVersion = forkedFrom.stateVersion;
      this.#seek(parent, countThrough(parent.toolEvents, forkedFrom.stateVersion));
    }
    const frame: Frame = {
      tenantId,
      threadId,
      checkpoints: snapshot.checkpoints,
      toolEvents: toolEventsOf(snapshot.messages),
      applied: 0,
      visibleVersion: Number.POSITIVE_INFINITY,
    };
    this.#stack.push(frame);
    for (const checkpoint of frame.checkpoints) {
      const holders = this.#checkpoints.get(checkpoint.checkpointId);
      if (holders) holders.push({ checkpoint, frame });
      else this.#checkpoints.set(checkpoint.checkpointId, [{ checkpoint, frame }]);
    }
    this.#seek(frame, frame.toolEvents.length);
    return {
      checkpoint: (checkpointId) => this.#visible(checkpointId),
      orphanToolCalls: this.#tracker.orphanToolCalls(),
    };
  }

  /** The deepest visible checkpoint with this id: the thread's own before an ancestor's. */
  #visible(checkpointId: string): CheckpointRecord | undefined {
    const holders = this.#checkpoints.get(checkpointId) ?? [];
    for (let index = holders.length - 1; index >= 0; index--) {
      const { checkpoint, frame } = holders[index]!;
      if (checkpoint.stateVersion <= frame.visibleVersion) return checkpoint;
    }
    return undefined;
  }

  /** Applies or takes back `frame`'s tool events until `count` of them are applied. */
  #seek(frame: Frame, count: number): void {
    while (frame.applied > count) this.#tracker.undo(frame.toolEvents[--frame.applied]!);
    while (frame.applied < count) this.#tracker.apply(frame.toolEvents[frame.applied++]!);
  }

  #pop(): void {
    const frame = this.#stack.pop()!;
    this.#seek(frame, 0);
    for (const checkpoint of frame.checkpoints) {
      const holders = this.#checkpoints.get(checkpoint.checkpointId)!;
      holders.pop();
      if (holders.length === 0) this.#checkpoints.delete(checkpoint.checkpointId);
    }
  }
}

/** How many of `events` (in version order) are at or below `version`: a binary search, so many siblings cost no more than one. */
function countThrough(events: readonly ToolEvent[], version: number): number {
  let low = 0;
  let high = events.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (events[middle]!.stateVersion <= version) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The lineage of a thread checked alone: its own rows, nothing inherited. */
export function ownLineage(snapshot: ThreadSnapshot): ThreadLineage {
  return new LineageWalker().enter({ ...snapshot, thread: { ...snapshot.thread, forkedFrom: null } });
}
