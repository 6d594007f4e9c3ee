import { createDemoModel, type ChatModel } from "../../../src/runtime/index.js";

/** The marker a user message carries to be held: `[gate:<key>]`. */
const GATE = /\[gate:([\w-]+)\]/;

/** Words streamed before a gated answer waits, so a client can see (and save) part of it first. */
const WORDS_BEFORE_GATE = 2;

/**
 * The demo model at full speed, except that an answer to a user message carrying `[gate:<key>]`
 * streams its first words, then waits until `open(key)`: a history test decides, as one of its
 * scheduled operations, when a run's answer goes on. An open gate stays open (a Continue of the
 * same request runs through). The wait honours the signal, as a provider does.
 */
export function createGatedModel(options: { wordCount?: number } = {}) {
  const demo = createDemoModel({ wordsPerSecond: 0, wordCount: options.wordCount ?? 12 });
  const opened = new Set<string>();
  const waiters = new Map<string, Set<() => void>>();
  const waitFor = (key: string, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      if (opened.has(key)) return resolve();
      const set = waiters.get(key) ?? new Set<() => void>();
      waiters.set(key, set);
      const onAbort = (): void => {
        set.delete(done);
        reject(signal.reason);
      };
      const done = (): void => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      set.add(done);
      signal.addEventListener("abort", onAbort, { once: true });
    });

  const model: ChatModel = {
    id: "demo",
    async *stream(request, streamOptions) {
      const lastUser = [...request.messages].reverse().find((message) => message.role === "user");
      const key = lastUser?.role === "user" ? GATE.exec(lastUser.content)?.[1] : undefined;
      let words = 0;
      for await (const part of demo.stream(request, streamOptions)) {
        if (key !== undefined && part.type === "text-delta" && words++ === WORDS_BEFORE_GATE) await waitFor(key, streamOptions.signal);
        yield part;
      }
    },
  };
  return {
    model,
    /** Lets the answers to `key` go on, now and later. */
    open(key: string): void {
      opened.add(key);
      for (const resolve of waiters.get(key) ?? []) resolve();
      waiters.delete(key);
    },
    /** A message text that holds its answer until `open(key)`. */
    gated: (text: string, key: string): string => `${text} [gate:${key}]`,
  };
}
