/**
 * A full garbage collection in a child started with `node --expose-gc`, so that a memory figure
 * read right after it is what the process really holds. Twice: the first pass's finalizers can
 * free more for the second.
 */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with --expose-gc");
  gc();
  gc();
}
