/** The title of a thread that may not be in the loaded list (a branch's origin), and whether it is gone. */
import { useEffect, useState } from "react";
import { TidemarkApiError, type ThreadView, type TidemarkClient } from "../../src/client/index.js";

/** What the page knows of another thread. */
export interface ThreadSummary {
  title: string | null;
  isDeleted: boolean;
}

/** Reads `threadId` from `threads`, or from the server when the list does not hold it. */
export function useThreadSummary(client: TidemarkClient, threadId: string | null, threads: readonly ThreadView[]): ThreadSummary {
  const listed = threadId === null ? undefined : threads.find((thread) => thread.thread_id === threadId);
  const [fetched, setFetched] = useState<{ threadId: string; summary: ThreadSummary } | null>(null);
  useEffect(() => {
    if (threadId === null || listed) return;
    const controller = new AbortController();
    client.getThread(threadId, { signal: controller.signal }).then(
      (thread) => setFetched({ threadId, summary: { title: thread.title, isDeleted: false } }),
      (error: unknown) => {
        if (TidemarkApiError.isInstance(error) && error.status === 404) setFetched({ threadId, summary: { title: null, isDeleted: true } });
      },
    );
    return () => controller.abort();
  }, [client, threadId, listed]);
  if (listed) return { title: listed.title, isDeleted: false };
  return fetched?.threadId === threadId ? fetched.summary : { title: null, isDeleted: false };
}
