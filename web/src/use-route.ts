/** The open thread lives in the address (`/threads/<id>`), so a reload or a shared link reopens it. */
import { useCallback, useEffect, useState } from "react";

const THREAD_PATH = /^\/threads\/([^/]+)\/?$/;

function threadIdOf(pathname: string): string | null {
  const match = THREAD_PATH.exec(pathname);
  return match?.[1] ? decodeURIComponent(match[1]) : null;
}

/** The thread id in the address, and a way to open another (`null`: none). */
export function useRoute(): { threadId: string | null; openThread(threadId: string | null, options?: { replace?: boolean }): void } {
  const [threadId, setThreadId] = useState(() => threadIdOf(window.location.pathname));
  useEffect(() => {
    const onPopState = (): void => setThreadId(threadIdOf(window.location.pathname));
    window.addEventListener("popstate", onPopState);
    return () => window.removeEventListener("popstate", onPopState);
  }, []);
  const openThread = useCallback((next: string | null, options: { replace?: boolean } = {}) => {
    const path = next === null ? "/" : `/threads/${encodeURIComponent(next)}`;
    if (path !== window.location.pathname) {
      if (options.replace) window.history.replaceState(null, "", path);
      else window.history.pushState(null, "", path);
    }
    setThreadId(next);
  }, []);
  return { threadId, openThread };
}
