import type { ThreadView } from "../../src/client/index.js";

/** A thread's title; a branch without one of its own is named after the thread it came from. */
export function threadTitle(threads: readonly ThreadView[], threadId: string): string {
  const thread = threads.find((candidate) => candidate.thread_id === threadId);
  if (thread?.title) return thread.title;
  const source = thread?.forked_from ? threads.find((candidate) => candidate.thread_id === thread.forked_from?.thread_id) : undefined;
  if (thread?.forked_from) return source?.title ? `Branch of “${source.title}”` : "Untitled branch";
  return "Untitled thread";
}
