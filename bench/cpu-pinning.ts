import { spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";

/**
 * A bench child pinned to one CPU (`taskset -c <cpu>`), so that two processes of a measurement
 * never wait for each other's CPU: on this 2-core machine the Stop shapes pin the provider, which
 * stands for another machine, to one core and the process measured to the other. Without it the
 * kernel now and then queues the provider's wake-up behind the measured process's own work, and
 * a close made at 1.5 ms is seen at 5.5 ms (one scheduler tick later). Falls back to an unpinned
 * child where `taskset` or a second CPU is missing; `pinned` says which it got.
 */
export interface PinnedCommand {
  command: string;
  args: string[];
  pinned: boolean;
}

let tasksetWorks: boolean | undefined;

/** The command that runs `node <args>` on `cpu`, or unpinned when that is not possible here. */
export function nodeOnCpu(cpu: number | undefined, args: readonly string[]): PinnedCommand {
  if (cpu === undefined || !canPin(cpu)) return { command: process.execPath, args: [...args], pinned: false };
  return { command: "taskset", args: ["-c", String(cpu), process.execPath, ...args], pinned: true };
}

function canPin(cpu: number): boolean {
  if (availableParallelism() <= cpu) return false;
  tasksetWorks ??= spawnSync("taskset", ["-c", "0", "true"], { stdio: "ignore" }).status === 0;
  return tasksetWorks;
}

/** Where the Stop shapes put their processes: the provider on one core, the process measured on the other. */
export const STOP_CPUS = { provider: 1, measured: 0 } as const;
