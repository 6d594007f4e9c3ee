/**
 * Reads a child's live heap through its inspector (`node --inspect=127.0.0.1:<port>`): a full
 * garbage collection first, then `process.memoryUsage()`. What is left after a full GC is what
 * the process really holds; RSS also counts heap V8 has grown into and not yet given back.
 */
import { WebSocket } from "ws";

export interface HeapReading {
  /** After the full GC, MB. */
  heapUsedMb: number;
  heapTotalMb: number;
  rssMb: number;
  /** How long the full GC stopped the child, ms. */
  gcMs: number;
}

type Reply = { id: number; result?: { result?: { value?: string } }; error?: { message: string } };

export async function readHeapAfterGc(port: number): Promise<HeapReading> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const socket = new WebSocket(targets[0]!.webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  let nextId = 0;
  const waiting = new Map<number, (reply: Reply) => void>();
  socket.on("message", (data) => {
    const reply = JSON.parse(String(data)) as Reply;
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Reply>((resolve) => {
      const id = ++nextId;
      waiting.set(id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    const gcStart = performance.now();
    await call("HeapProfiler.collectGarbage");
    const gcMs = performance.now() - gcStart;
    const reply = await call("Runtime.evaluate", { expression: "JSON.stringify(process.memoryUsage())", returnByValue: true });
    const usage = JSON.parse(reply.result?.result?.value ?? "{}") as { heapUsed: number; heapTotal: number; rss: number };
    const mb = (bytes: number) => Math.round((bytes / 1_048_576) * 10) / 10;
    return { heapUsedMb: mb(usage.heapUsed), heapTotalMb: mb(usage.heapTotal), rssMb: mb(usage.rss), gcMs: Math.round(gcMs) };
  } finally {
    socket.close();
  }
}
