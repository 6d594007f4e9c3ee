/**
 * The order in which `Store.scanThreads` yields threads, the same for every adapter: each root,
 * then its branches depth first, a thread's branches latest fork point first. `tidemark check`
 * then holds only the current chain of ancestors, and moving from one branch to its sibling takes
 * back only what the sibling does not share (see check/lineage-walker.ts).
 */

/** A thread's primary key. */
export interface ThreadKey {
  tenantId: string;
  threadId: string;
}

/** A branch's key and where it hangs. */
export interface BranchKey extends ThreadKey {
  parentThreadId: string;
  forkStateVersion: number;
}

/**
 * `roots` in their order, each followed by its subtree; then every branch not reached from a root
 * (its parent is missing, or a corrupted store made a cycle), in key order, each with its subtree.
 * Every branch comes exactly once.
 */
export async function* lineageScanOrder(roots: AsyncIterable<ThreadKey>, branches: readonly BranchKey[]): AsyncIterable<ThreadKey> {
  const children = new Map<string, BranchKey[]>();
  for (const branch of branches) {
    const parent = keyOf(branch.tenantId, branch.parentThreadId);
    const siblings = children.get(parent);
    if (siblings) siblings.push(branch);
    else children.set(parent, [branch]);
  }
  for (const siblings of children.values()) {
    siblings.sort((a, b) => b.forkStateVersion - a.forkStateVersion || compare(a.threadId, b.threadId));
  }
  const visited = new Set<string>();
  function* subtree(start: ThreadKey): Generator<ThreadKey> {
    // An explicit stack: a fork chain may be thousands deep.
    const stack: ThreadKey[] = [start];
    while (stack.length > 0) {
      const next = stack.pop()!;
      yield next;
      const below = children.get(keyOf(next.tenantId, next.threadId)) ?? [];
      for (let index = below.length - 1; index >= 0; index--) {
        const branch = below[index]!;
        const key = keyOf(branch.tenantId, branch.threadId);
        if (visited.has(key)) continue;
        visited.add(key);
        stack.push(branch);
      }
    }
  }
  for await (const root of roots) yield* subtree(root);
  const unreached = branches
    .filter((branch) => !visited.has(keyOf(branch.tenantId, branch.threadId)))
    .sort((a, b) => compare(a.tenantId, b.tenantId) || compare(a.threadId, b.threadId));
  for (const branch of unreached) {
    const key = keyOf(branch.tenantId, branch.threadId);
    if (visited.has(key)) continue;
    visited.add(key);
    yield* subtree(branch);
  }
}

function keyOf(tenantId: string, threadId: string): string {
  return JSON.stringify([tenantId, threadId]);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
