/** The sidebar's threads: the first page, older pages on request, refreshed when asked. */
import { useCallback, useEffect, useRef, useState } from "react";
import type { TidemarkClient, ThreadView } from "../../src/client/index.js";

const PAGE_SIZE = 30;

/** What {@link useThreadList} gives the app. */
export interface ThreadListState {
  threads: ThreadView[];
  hasMore: boolean;
  isLoading: boolean;
  error: Error | null;
  /** Reads the first page again, keeping the older pages already shown. */
  refresh(): void;
  loadMore(): void;
}

/** Lists the tenant's threads, newest first. */
export function useThreadList(client: TidemarkClient): ThreadListState {
  const [threads, setThreads] = useState<ThreadView[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [isLoading, setIsLoading] = useState(true);
  const [error, setError] = useState<Error | null>(null);
  const latest = useRef(0);
  // Once older pages are shown, a refresh of the first page keeps them and their cursor.
  const isOlderShown = useRef(false);

  const load = useCallback(
    (before: string | null) => {
      const request = ++latest.current;
      setIsLoading(true);
      client.listThreads({ limit: PAGE_SIZE, before }).then(
        (page) => {
          if (request !== latest.current) return;
          if (before === null) {
            setThreads((shown) => (isOlderShown.current ? mergeFirstPage(shown, page.threads) : page.threads));
            if (!isOlderShown.current) setCursor(page.next_cursor);
          } else {
            isOlderShown.current = true;
            setThreads((shown) => appendPage(shown, page.threads));
            setCursor(page.next_cursor);
          }
          setError(null);
          setIsLoading(false);
        },
        (failure: unknown) => {
          if (request !== latest.current) return;
          setError(failure instanceof Error ? failure : new Error(String(failure)));
          setIsLoading(false);
        },
      );
    },
    [client],
  );

  // A new client (another API key) starts from scratch.
  useEffect(() => {
    isOlderShown.current = false;
    load(null);
  }, [load]);

  // Back online: what changed meanwhile (titles, finished runs) is read again.
  useEffect(() => {
    const onOnline = (): void => load(null);
    window.addEventListener("online", onOnline);
    return () => window.removeEventListener("online", onOnline);
  }, [load]);

  return {
    threads,
    hasMore: cursor !== null,
    isLoading,
    error,
    refresh: useCallback(() => load(null), [load]),
    loadMore: useCallback(() => {
      if (cursor !== null) load(cursor);
    }, [cursor, load]),
  };
}

/** The fresh first page, then the older threads already shown that it does not hold. */
function mergeFirstPage(shown: ThreadView[], firstPage: ThreadView[]): ThreadView[] {
  const fresh = new Set(firstPage.map((thread) => thread.thread_id));
  const oldestFresh = firstPage.at(-1);
  const older = oldestFresh ? shown.filter((thread) => !fresh.has(thread.thread_id) && thread.updated_at < oldestFresh.updated_at) : [];
  return [...firstPage, ...older];
}

function appendPage(shown: ThreadView[], page: ThreadView[]): ThreadView[] {
  const known = new Set(shown.map((thread) => thread.thread_id));
  return [...shown, ...page.filter((thread) => !known.has(thread.thread_id))];
}
