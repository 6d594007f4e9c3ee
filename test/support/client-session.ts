/** Helpers for tests of `tidemark/client`: wait for state, never sleep. */
import type { ChatSession, ChatSnapshot, StreamNotice } from "../../src/client/index.js";
import { STOPPED_RESPONSE_NOTE } from "../../src/runtime/execute-run.js";
import { createDemoModel, type ChatModel, type ModelRequest } from "../../src/runtime/index.js";

/** Resolves with the first snapshot for which `predicate` holds (the current one included); `timeoutMs` only guards a hang. */
export function waitForSnapshot(session: ChatSession, predicate: (snapshot: ChatSnapshot) => boolean, timeoutMs = 30_000): Promise<ChatSnapshot> {
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

/**
 * `otherwise`, except that an answer to a message starting with "gate" comes from `gated` (and
 * waits for its release): one model for tests that hold some runs and let others run through.
 */
export function gatedWhenAskedTo(gated: GatedModel, otherwise: ChatModel): ChatModel {
  return {
    ...otherwise,
    stream: (request, options) => (request.messages.at(-1)?.content.startsWith("gate") ? gated.model : otherwise).stream(request, options),
  };
}

/**
 * A model whose answers stop halfway until the test lets them finish: `before` words, then a wait
 * for {@link GatedModel.release} (a cancel aborts it), then `after` words. The test decides
 * whether a Stop lands before the end or too late, instead of racing a clock.
 */
export interface GatedModel {
  model: ChatModel;
  /** Lets the answers started so far finish; later ones wait for the next release. */
  release(): void;
}

/** Creates a {@link GatedModel}. */
export function createGatedModel(options: { before?: string[]; after?: string[] } = {}): GatedModel {
  const before = options.before ?? "The tide turns because the moon".split(" ");
  const after = options.after ?? "pulls the sea, and the earth turns beneath it.".split(" ");
  let open!: () => void;
  let gate = new Promise<void>((resolve) => (open = resolve));
  return {
    model: {
      id: "gated-demo",
      async *stream(_request, { signal }) {
        // The gate of the moment the answer starts: a release after its first words always reaches it.
        const current = gate;
        for (const [index, word] of before.entries()) yield { type: "text-delta", text: index === 0 ? word : ` ${word}` };
        await new Promise<void>((resolve, reject) => {
          if (signal.aborted) return reject(signal.reason);
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
          void current.then(resolve);
        });
        for (const word of after) yield { type: "text-delta", text: ` ${word}` };
        yield { type: "finish", finishReason: "stop" };
      },
    },
    release() {
      const release = open;
      gate = new Promise<void>((resolve) => (open = resolve));
      release();
    },
  };
}

/**
 * A `fetch` whose network the test can cut and restore: while cut, every request fails as an
 * unreachable server does (a TypeError), and the streams open at the cut are broken too.
 */
export interface NetworkSwitch {
  fetch: typeof globalThis.fetch;
  cut(): void;
  restore(): void;
  /** Requests refused while the network was cut, by path (e.g. `/v1/runs/run_…/cancel`). */
  readonly refused: readonly string[];
}

/** Creates a {@link NetworkSwitch} over the global fetch. */
export function createNetworkSwitch(): NetworkSwitch {
  let isCut = false;
  const refused: string[] = [];
  const open = new Set<AbortController>();
  return {
    fetch(input, init = {}) {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (isCut) {
        refused.push(url.pathname);
        return Promise.reject(new TypeError("fetch failed: the test cut the network"));
      }
      // One controller per request, held until the cut: a signal made by AbortSignal.any may be
      // collected while its fetch still streams, and then a cut would not reach it.
      const controller = new AbortController();
      open.add(controller);
      const caller = init.signal;
      if (caller?.aborted) controller.abort(caller.reason);
      caller?.addEventListener("abort", () => controller.abort(caller.reason), { once: true });
      return globalThis.fetch(input, { ...init, signal: controller.signal });
    },
    cut() {
      isCut = true;
      for (const controller of open) controller.abort(new TypeError("network down: the test cut it"));
      open.clear();
    },
    restore() {
      isCut = false;
    },
    refused,
  };
}
