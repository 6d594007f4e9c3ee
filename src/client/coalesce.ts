/**
 * Wraps `task` so that at most one run is in flight: a call while it runs asks for one more run
 * after it (whatever changed meanwhile is read again), and every caller waits for that.
 */
export function coalesce(task: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  let isAskedAgain = false;
  return function runCoalesced() {
    if (running) {
      isAskedAgain = true;
      return running;
    }
    running = (async () => {
      do {
        isAskedAgain = false;
        await task();
      } while (isAskedAgain);
    })().finally(() => (running = null));
    return running;
  };
}
