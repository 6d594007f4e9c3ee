/** Helpers for tests of `tidemark/client`: wait for state, never sleep. */
import type { ChatSession, ChatSnapshot, StreamNotice } from "../../src/client/index.js";
import { STOPPED_RESPONSE_NOTE } from "../../src/runtime/execute-run.js";
import { createDemoModel, type ChatModel, type ModelRequest } from "../../src/runtime/index.js";

/** Resolves with the first snapshot for which `predicate` holds (the current one included). */
export function waitForSnapshot(session: ChatSession, predicate: (snapshot: ChatSnapshot) => boolean, timeoutMs = 10_000): Promise<ChatSnapshot> {
  return new Promise((resolve, reject) => {
    if (predicate(session.getSnapshot())) return resolve(session.getSnapshot());
    const timer = setTimeout(() => {
      unsubscribe();
      const { run, connection, draft, error } = session.getSnapshot();
      reject(new Error(`snapshot never matched: run ${run.status}, connection ${connection.status}, draft ${draft?.status}, error ${error?.message}`));
    }, timeoutMs);
    const unsubscribe = session.subscribe((snapshot) => {
      if (!predicate(snapshot)) return;
      clearTimeout(timer);
      unsubscribe();
      resolve(snapshot);
    });
  });
}

/** The connection states in `notices`, in order. */
export const connectionStates = (notices: readonly StreamNotice[]) =>
  notices.flatMap((notice) => (notice.kind === "connection" ? [notice.state] : []));

/** The events in `notices`, in order. */
export const eventsOf = (notices: readonly StreamNotice[]) => notices.flatMap((notice) => (notice.kind === "event" ? [notice.event] : []));

/**
 * The demo model for session tests: a request whose last message asks for something "long" gets
 * an answer that never ends on its own (so a Stop always lands mid-stream), unless it is a
 * continuation after a Stop (the model is told so), which gets a short answer. Records requests.
 */
export function stopAwareModel(requests: ModelRequest[] = []): ChatModel {
  const short = createDemoModel({ wordsPerSecond: 400, wordCount: 30 });
  const long = createDemoModel({ wordsPerSecond: 200, wordCount: 100_000 });
  return {
    ...short,
    id: "stop-aware-demo",
    stream(request, options) {
      requests.push(request);
      const isContinuation = request.messages.some((message) => message.role === "system" && message.content === STOPPED_RESPONSE_NOTE);
      const isLong = !isContinuation && (request.messages.at(-1)?.content.includes("long") ?? false);
      return (isLong ? long : short).stream(request, options);
    },
  };
}
