import type { ChildProcess } from "node:child_process";
import { withTimeout } from "./bench-support.js";

/** The next IPC message of `type` from `child`, or a rejection after `timeoutMs`. */
export function nextMessage<T extends { type: string }, K extends T["type"]>(child: ChildProcess, type: K, timeoutMs: number): Promise<Extract<T, { type: K }>> {
  let onMessage: ((message: T) => void) | undefined;
  const received = new Promise<Extract<T, { type: K }>>((resolve) => {
    onMessage = (message: T): void => {
      if (message.type === type) resolve(message as Extract<T, { type: K }>);
    };
    child.on("message", onMessage);
  });
  return withTimeout(received, timeoutMs, `a "${type}" message from child ${child.pid}`).finally(() => child.off("message", onMessage!));
}
