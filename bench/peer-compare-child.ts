/**
 * One peer running one shape of peer-compare, in a process of its own so that its CPU and RSS are
 * its own: `node peer-compare-child.js <peer> <shape> <provider url>`, with an IPC channel. It
 * sends `{ type: "stopped" }` after each Stop (stop shape) and waits for `{ type: "next" }`; at
 * the end it sends `{ type: "report" }` (or `{ type: "error" }`) and exits.
 */
import { aiSdkPeer, langGraphPeer, openaiPeer, rawPeer } from "./peer-libraries.js";
import { runBackToBack, runPaced, runStops, type ShapeName, type ShapeReport, type StopNotice } from "./peer-shapes.js";
import type { Peer, PeerName } from "./peer-stream.js";
import { startRelayPeer } from "./peer-relay.js";
import { startTidemarkPeer } from "./peer-tidemark.js";

export type ChildMessage = StopNotice | { type: "report"; report: ShapeReport } | { type: "error"; error: string };

async function createPeer(name: PeerName, baseURL: string): Promise<Peer> {
  switch (name) {
    case "raw":
      return rawPeer(baseURL);
    case "openai":
      return openaiPeer(baseURL);
    case "ai-sdk":
      return aiSdkPeer(baseURL);
    case "langgraph":
      return langGraphPeer(baseURL);
    case "tidemark":
      return startTidemarkPeer(baseURL);
    case "relay":
      return startRelayPeer(baseURL);
  }
  throw new Error(`unknown peer ${String(name)}`);
}

const send = (message: ChildMessage): Promise<void> =>
  new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error("run with an IPC channel"));
    process.send(message, undefined, undefined, (error) => (error ? reject(error) : resolve()));
  });

/** Sends the notice and waits for the parent's `next`. */
function notifyAndWait(notice: StopNotice): Promise<void> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if ((message as { type?: string }).type !== "next") return;
      process.off("message", onMessage);
      resolve();
    };
    process.on("message", onMessage);
    send(notice).catch(reject);
  });
}

async function main(): Promise<void> {
  const [peerName, shape, baseURL] = process.argv.slice(2) as [PeerName, ShapeName, string];
  const peer = await createPeer(peerName, baseURL);
  try {
    const report =
      shape === "back-to-back" ? await runBackToBack(peer) : shape === "stop" ? await runStops(peer, notifyAndWait) : await runPaced(peer, shape);
    await send({ type: "report", report });
  } finally {
    await peer.close();
  }
}

main()
  .catch(async (error: unknown) => {
    await send({ type: "error", error: error instanceof Error ? (error.stack ?? error.message) : String(error) }).catch(() => undefined);
    process.exitCode = 1;
  })
  // Idle keep-alive sockets and the like must not hold the process open: the report is sent.
  .finally(() => process.exit());
