import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU time of another process, all its threads (the main thread, libuv's pool, V8's GC and
 * compiler threads), in nanoseconds, from `/proc/<pid>/task/<tid>/schedstat` (Linux): its first
 * field is the time the thread ran. /proc/<pid>/stat counts in 10 ms ticks, too coarse for a
 * stretch of a few hundred milliseconds. A thread that ended meanwhile is no longer counted, so
 * compare stretches whose threads live throughout (a server's pool does). Undefined off Linux.
 */
export function processCpuNanos(pid: number): number | undefined {
  try {
    let total = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // The thread ended between the listing and the read.
      }
    }
    return total;
  } catch {
    return undefined;
  }
}
