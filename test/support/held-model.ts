import { createDemoModel, type ChatModel } from "../../src/runtime/index.js";

/**
 * The demo model, except that an answer to a message starting with "hold" waits for `release()`.
 * `whenHeld(n)` resolves once `n` answers are waiting, so a test releases only what it started.
 */
export function createHeldModel() {
  const demo = createDemoModel({ wordsPerSecond: 0, wordCount: 60 });
  let release: () => void = () => {};
  let held = new Promise<void>((resolve) => (release = resolve));
  let waiting = 0;
  const watchers = new Set<{ count: number; resolve: () => void }>();
  const notify = (): void => {
    for (const watcher of watchers) {
      if (waiting < watcher.count) continue;
      watchers.delete(watcher);
      watcher.resolve();
    }
  };
  const model: ChatModel = {
    id: "demo",
    async *stream(request, options) {
      const last = request.messages.at(-1);
      if (last?.role === "user" && last.content.startsWith("hold")) {
        waiting++;
        notify();
        try {
          await new Promise<void>((resolve, reject) => {
            // As a provider does: a request whose signal is already aborted never starts (no abort event would come).
            if (options.signal.aborted) return reject(options.signal.reason);
            options.signal.addEventListener("abort", () => reject(options.signal.reason), { once: true });
            void held.then(resolve);
          });
        } finally {
          waiting--;
        }
      }
      yield* demo.stream(request, options);
    },
  };
  return {
    model,
    release: () => {
      release();
      held = new Promise<void>((resolve) => (release = resolve));
    },
    /** Resolves once at least `count` answers wait for `release()`. */
    whenHeld: (count = 1) =>
      new Promise<void>((resolve) => {
        watchers.add({ count, resolve });
        notify();
      }),
  };
}
