/**
 * The OpenAI-compatible test provider in a process of its own (a real upstream: its sockets close
 * only when Tidemark's do), queried over IPC. Times are the child's `performance.now()` plus its
 * time origin, so they compare with `Date.now()`-scale absolute times in this process.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import type { TestProviderScenario } from "../../src/testing/index.js";

/** A request as the child saw it. */
export interface ProviderRequestSnapshot {
  id: number;
  token: string | undefined;
  /** The request's messages as JSON text (to find a marker in). */
  messages: string;
  startedAt: number;
  socketClosedAt: number | undefined;
  chunkTimes: number[];
  cancelCalls: number;
  status: number;
}

export interface ProviderSnapshot {
  requests: ProviderRequestSnapshot[];
  cancels: { token: string; at: number }[];
}

export interface ProviderProcess {
  url: string;
  cancelUrl: string;
  /** The child's state now. */
  snapshot(): Promise<ProviderSnapshot>;
  /** Resolves once `count` requests numbered above `afterId` are open at once (arrived, socket not yet closed). */
  waitForOpen(count: number, afterId?: number): Promise<ProviderSnapshot>;
  /** Resolves once no request is open and `cancels` cancel calls arrived. */
  waitForQuiet(cancels: number): Promise<ProviderSnapshot>;
  /**
   * Switches the scenario of requests that arrive from now on; resolves with how many had arrived
   * before the switch, read in the same turn (every request numbered above it got the new one).
   */
  setScenario(scenario: TestProviderScenario): Promise<number>;
  close(): Promise<void>;
}

function childScript(moduleUrl: string, scenario: TestProviderScenario): string {
  return `
const { startTestProvider } = await import(${JSON.stringify(moduleUrl)});
const abs = (t) => (t === undefined ? undefined : performance.timeOrigin + t);
const provider = await startTestProvider({ scenario: ${JSON.stringify(scenario)} });
const send = (message) => { if (process.connected) process.send(message); };
const snapshot = () => ({
  requests: provider.requests.map((r) => ({
    id: r.id, token: r.token, messages: JSON.stringify(r.body?.messages ?? null), startedAt: abs(r.startedAt),
    socketClosedAt: abs(r.socketClosedAt), chunkTimes: r.chunkTimes.map(abs), cancelCalls: r.cancelCalls, status: r.status,
  })),
  cancels: provider.cancels.map((c) => ({ token: c.token, at: abs(c.at) })),
});
const waiters = [];
const check = () => {
  for (const waiter of waiters.splice(0)) {
    const open = provider.requests.filter((r) => r.socketClosedAt === undefined && r.id > (waiter.afterId ?? 0)).length;
    const done = waiter.kind === "open" ? open >= waiter.count : open === 0 && provider.cancels.length >= waiter.count;
    if (done) send({ type: "answer", ticket: waiter.ticket, snapshot: snapshot() });
    else waiters.push(waiter);
  }
};
// Checked on every request and close (polling the child's own state, never the parent's clock).
setInterval(check, 1).unref();
process.on("message", async (message) => {
  if (message.type === "snapshot") return send({ type: "answer", ticket: message.ticket, snapshot: snapshot() });
  if (message.type === "scenario") { provider.setScenario(message.scenario); return send({ type: "answer", ticket: message.ticket, requestsBefore: provider.requests.length }); }
  waiters.push(message);
  check();
});
process.on("disconnect", () => { provider.close().finally(() => process.exit(0)); });
setTimeout(() => process.exit(0), 600000).unref();
send({ type: "ready", url: provider.url, cancelUrl: provider.cancelUrl });
`;
}

/** Starts the test provider in a child process with an IPC channel. */
export async function startProviderProcess(scenario: TestProviderScenario): Promise<ProviderProcess> {
  const moduleUrl = new URL("../../src/testing/index.ts", import.meta.url).href;
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", childScript(moduleUrl, scenario)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = once(child, "exit");
  const answers = new Map<number, (message: { snapshot?: ProviderSnapshot }) => void>();
  let nextTicket = 0;
  const ready = new Promise<{ url: string; cancelUrl: string }>((resolve, reject) => {
    child.on("message", (raw) => {
      const message = raw as { type: string; ticket?: number; url?: string; cancelUrl?: string; snapshot?: ProviderSnapshot; requestsBefore?: number };
      if (message.type === "ready") return resolve({ url: message.url!, cancelUrl: message.cancelUrl! });
      const answer = answers.get(message.ticket!);
      answers.delete(message.ticket!);
      answer?.(message);
    });
    void exited.then(() => reject(new Error("the provider process exited")));
  });
  const { url, cancelUrl } = await ready;
  const ask = <T>(message: Record<string, unknown>): Promise<T> =>
    new Promise((resolve) => {
      const ticket = nextTicket++;
      answers.set(ticket, resolve as (message: { snapshot?: ProviderSnapshot }) => void);
      child.send({ ...message, ticket });
    });
  const snapshotOf = async (message: Record<string, unknown>) => (await ask<{ snapshot: ProviderSnapshot }>(message)).snapshot;
  return {
    url,
    cancelUrl,
    snapshot: () => snapshotOf({ type: "snapshot" }),
    waitForOpen: (count, afterId = 0) => snapshotOf({ type: "open", kind: "open", count, afterId }),
    waitForQuiet: (cancels) => snapshotOf({ type: "quiet", kind: "quiet", count: cancels }),
    setScenario: async (next) => (await ask<{ requestsBefore: number }>({ type: "scenario", scenario: next })).requestsBefore,
    close: async () => {
      child.disconnect();
      await exited;
    },
  };
}
