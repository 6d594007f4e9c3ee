import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { withTimeout } from "./bench-support.js";
import { nodeOnCpu } from "./cpu-pinning.js";
import type { ChildMessage } from "./peer-compare-child.js";
import { STOP, type ShapeName, type ShapeReport, type StopNotice } from "./peer-shapes.js";
import type { PeerName } from "./peer-stream.js";
import type { RemoteProvider } from "./remote-provider.js";

/** Runs one peer on one shape in a fresh `node peer-compare-child.js` and collects what it reports. */

const CHILD_PATH = fileURLToPath(new URL("./peer-compare-child.js", import.meta.url));
/** Every child is bounded; LangGraph.js on 200 paced streams is the slowest at ≈ 20 s on 2 cores. */
const CHILD_TIMEOUT_MS: Record<ShapeName, number> = { "back-to-back": 180_000, stop: 150_000, paced: 180_000, "paced-short": 60_000 };
/** How long the provider may take to see the socket close before the Stop counts as "not closed". */
const CLOSE_TIMEOUT_MS = 2_000;

/** One measured Stop, as the provider (its own process) saw it. */
export interface StopSample {
  /** Stop pressed in the child → the provider's response closed (absolute clocks); Infinity if not within 2 s. */
  stopToCloseMs: number;
  /** Chunks the provider wrote after the Stop was pressed. */
  chunksAfterStop: number;
}

export interface ChildOutcome {
  report: ShapeReport;
  /** Stop shape only: the measured Stops (warm-up ones left out). */
  stops: StopSample[];
}

/** Asks the provider when the marked request's socket closed, relative to the child's Stop. */
async function stopSampleOf(provider: RemoteProvider, notice: StopNotice): Promise<StopSample> {
  const request = await provider.streamingRequestFor(notice.marker, 5_000);
  const closed = provider.closed(request.id);
  const isClosed = await withTimeout(closed, CLOSE_TIMEOUT_MS, "socket close").then(
    () => true,
    () => false,
  );
  const close = await withTimeout(closed, 10_000, `request ${request.id} to close`);
  return {
    stopToCloseMs: isClosed ? close.socketClosedAt - notice.stopAt : Number.POSITIVE_INFINITY,
    chunksAfterStop: close.chunkTimes.filter((at) => at > notice.stopAt).length,
  };
}

/** `cpu`: the one CPU the child may use (the Stop shape's, away from the provider's), or any. */
export async function runPeerChild(peer: PeerName, shape: ShapeName, provider: RemoteProvider, cpu?: number): Promise<ChildOutcome> {
  const { command, args } = nodeOnCpu(cpu, [CHILD_PATH, peer, shape, provider.url]);
  const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe", "ipc"] });
  const exited = once(child, "exit");
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-4_000)));
  const stops: StopSample[] = [];
  const reported = new Promise<ShapeReport>((resolve, reject) => {
    child.on("message", (raw) => {
      const message = raw as ChildMessage;
      if (message.type === "report") return resolve(message.report);
      if (message.type === "error") return reject(new Error(message.error));
      stopSampleOf(provider, message).then((sample) => {
        if (message.index >= STOP.warmup) stops.push(sample);
        if (child.connected) child.send({ type: "next" });
      }, reject);
    });
    void exited.then(([code]) => reject(new Error(`the ${peer} child exited ${String(code)} before reporting: ${stderr.slice(-1_000)}`)));
  });
  try {
    return { report: await withTimeout(reported, CHILD_TIMEOUT_MS[shape], `${peer} on ${shape}`), stops };
  } finally {
    const hasExited = await withTimeout(exited, 5_000, `the ${peer} child to exit`).then(
      () => true,
      () => false,
    );
    if (!hasExited) {
      child.kill("SIGKILL");
      await exited;
    }
  }
}
