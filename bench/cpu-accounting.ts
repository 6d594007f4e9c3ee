import { readdirSync, readFileSync } from "node:fs";
import { round } from "./statistics.js";

/**
 * CPU time spent during a stretch of a benchmark, per process (this one, its children, all of the
 * machine's PostgreSQL backends) and for the machine as a whole, from /proc (Linux only; a
 * figure that cannot be read is undefined).
 */

/** Clock ticks of /proc/<pid>/stat (USER_HZ; 100 on Linux everywhere that matters). */
const TICKS_PER_SECOND = 100;

/** utime + stime of a /proc/<pid>/stat line, in seconds. */
function statCpuSeconds(stat: string): number {
  // Fields after the command (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function processCpuSeconds(pid: number): number | undefined {
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return undefined;
  }
}

/** CPU seconds of every `postgres` process on the machine (every session's, not only this bench's). */
function postgresCpuSeconds(): number | undefined {
  try {
    let total = 0;
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        if (!stat.includes("(postgres)")) continue;
        total += statCpuSeconds(stat);
      } catch {
        // The process ended meanwhile.
      }
    }
    return total;
  } catch {
    return undefined;
  }
}

function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
    const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = ticks.reduce((sum, tick) => sum + tick, 0);
    return { busy: total - ticks[3]! - ticks[4]!, total };
  } catch {
    return undefined;
  }
}

/** A child process to account for, by the name it is reported under. */
export interface AccountedProcess {
  readonly name: string;
  readonly pid: number;
}

export type CpuSnapshot = ReturnType<typeof takeCpuSnapshot>;

/** What each process has spent so far, to subtract after the stretch with {@link cpuSince}. */
export function takeCpuSnapshot(children: readonly AccountedProcess[]) {
  const usage = process.cpuUsage();
  return {
    machine: machineTicks(),
    processes: {
      "bench client": (usage.user + usage.system) / 1e6,
      ...Object.fromEntries(children.map((child) => [child.name, processCpuSeconds(child.pid)])),
      "postgres (all backends on the machine)": postgresCpuSeconds(),
    } as Record<string, number | undefined>,
  };
}

/** CPU seconds per process since `before`, and the busy share of all CPUs over that time. */
export function cpuSince(before: CpuSnapshot, children: readonly AccountedProcess[]) {
  const after = takeCpuSnapshot(children);
  const cpuSeconds: Record<string, number | undefined> = {};
  for (const [name, seconds] of Object.entries(after.processes)) {
    const start = before.processes[name];
    cpuSeconds[name] = seconds === undefined || start === undefined ? undefined : round(seconds - start, 2);
  }
  const busy = before.machine && after.machine ? (after.machine.busy - before.machine.busy) / (after.machine.total - before.machine.total) : undefined;
  return { cpuSeconds, machineCpuBusy: busy === undefined ? undefined : round(busy, 3) };
}
