/**
 * One chat session per open thread, as React state. A session opened without a thread creates one
 * on its first message, and a branch switches the session to its new thread: the hook reports
 * both through `onThreadChange`, so the page's address can follow, and a session whose thread is
 * the one asked for is kept, not re-created.
 */
import { useEffect, useRef, useState, useSyncExternalStore } from "react";
import { createChatSession, type ChatSession, type ChatSnapshot, type TidemarkClient } from "../../src/client/index.js";

/** How a session's thread changed: `created` by its first message, or `branched` to a new one. */
export type ThreadChange = { threadId: string; kind: "created" | "branched" };

interface OpenSession {
  session: ChatSession;
  unsubscribe(): void;
}

/** The session of `threadId` (a new thread for `null`) and its current snapshot. */
export function useChatSession(
  client: TidemarkClient,
  threadId: string | null,
  onThreadChange: (change: ThreadChange) => void,
): { session: ChatSession | null; snapshot: ChatSnapshot | null } {
  const current = useRef<OpenSession | null>(null);
  const [session, setSession] = useState<ChatSession | null>(null);
  const onChange = useRef(onThreadChange);
  onChange.current = onThreadChange;

  useEffect(() => {
    const previous = current.current;
    if (previous && previous.session.getSnapshot().threadId === threadId) return;
    close(previous);
    const opened = threadId === null ? createChatSession({ client }) : createChatSession({ client, threadId });
    let known = opened.getSnapshot().threadId;
    const unsubscribe = opened.subscribe((snapshot) => {
      if (snapshot.threadId === known || snapshot.threadId === null) return;
      const kind = known === null ? "created" : "branched";
      known = snapshot.threadId;
      onChange.current({ threadId: snapshot.threadId, kind });
    });
    current.current = { session: opened, unsubscribe };
    setSession(opened);
  }, [client, threadId]);

  // On unmount only: a thread switch closes the old session above.
  useEffect(
    () => () => {
      close(current.current);
      current.current = null;
    },
    [],
  );

  const source = session ?? noSession;
  const snapshot = useSyncExternalStore<ChatSnapshot | null>(source.subscribe, source.getSnapshot);
  return { session, snapshot };
}

function close(open: OpenSession | null): void {
  open?.unsubscribe();
  open?.session.close();
}

const noSession = { subscribe: () => () => {}, getSnapshot: (): ChatSnapshot | null => null };
