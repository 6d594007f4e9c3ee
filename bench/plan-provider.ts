import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import type { TestProviderScenario } from "../src/testing/index.js";
import { estimateClockOffset, type ClockOffset } from "./absolute-clock.js";
import { withTimeout } from "./bench-support.js";

/**
 * The OpenAI-compatible test provider in a child process, for plans: many requests at once, each
 * with its explicit cancel calls. The child answers waits on its own state ("8 streams open and
 * streaming", "every request closed and its cancels in") with a snapshot of the requests since a
 * given request number. Every time in a snapshot is absolute in the child
 * (`performance.timeOrigin + performance.now()`); subtract {@link PlanProvider.clockOffset}'s
 * offset to compare it with `absoluteNow()` here.
 */

/** One chat-completions request as the child recorded it. */
export interface PlanRequest {
  /** The provider's 1-based request number. */
  id: number;
  token: string | null;
  /** `stream: true` (a model step); false for a title or an unparsed body. */
  isStreaming: boolean;
  /** `JSON.stringify(body.messages)`, to find a run's marker in. */
  messages: string;
  /** Absolute (child clock) time the request arrived. */
  startedAt: number;
  /** Absolute (child clock) time its response closed; null while open. */
  socketClosedAt: number | null;
  /** Absolute (child clock) time of each content chunk written (streaming requests only). */
  chunkTimes: number[];
  cancelCalls: number;
  status: number;
}

/** The child's state: the requests numbered above `afterId`, and the cancel calls naming their tokens. */
export interface PlanSnapshot {
  /** Every request the child has received so far (the next one is number `requestCount + 1`). */
  requestCount: number;
  requests: PlanRequest[];
  cancels: { token: string; at: number }[];
  /** The wait's bound passed before its condition held (the snapshot is the state then). */
  isTimedOut: boolean;
}

export interface PlanProvider {
  /** Base URL for an OpenAI client, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  /** Where Tidemark POSTs `{"request_id": token}` (TIDEMARK_PROVIDER_CANCEL_URL). */
  cancelUrl: string;
  /** The state now, for the requests numbered above `afterId`. */
  snapshot(afterId: number): Promise<PlanSnapshot>;
  /** How many requests the child has received so far. */
  requestCount(): Promise<number>;
  /**
   * Resolves once `count` streaming requests numbered above `afterId` are open at once and have
   * each written at least `chunks` chunks (or `timeoutMs` passed: `isTimedOut`).
   */
  waitForStreaming(options: { afterId: number; count: number; chunks: number; timeoutMs: number }): Promise<PlanSnapshot>;
  /**
   * Resolves once every request numbered above `afterId` has closed and at least `cancels` cancel
   * calls for their tokens have arrived (or `timeoutMs` passed: `isTimedOut`).
   */
  waitForQuiet(options: { afterId: number; cancels: number; timeoutMs: number }): Promise<PlanSnapshot>;
  /** Child clock − this clock (ms), by IPC ping-pong; right to ± rttMs / 2. */
  clockOffset(pings: number): Promise<ClockOffset>;
  close(): Promise<void>;
}

type Wait = { kind: "streaming"; afterId: number; count: number; chunks: number } | { kind: "quiet"; afterId: number; cancels: number };
type ParentMessage = { type: "ping"; ticket: number } | { type: "snapshot"; ticket: number; afterId: number } | ({ type: "wait"; ticket: number; timeoutMs: number } & Wait);
type ChildMessage = { type: "ready"; url: string; cancelUrl: string } | { type: "answer"; ticket: number; at?: number; snapshot?: PlanSnapshot };

function childScript(moduleUrl: string, scenario: TestProviderScenario): string {
  return [
    `const { startTestProvider } = await import(${JSON.stringify(moduleUrl)});`,
    `const abs = (t) => (t === undefined ? null : performance.timeOrigin + t);`,
    `const provider = await startTestProvider({ scenario: ${JSON.stringify(scenario)} });`,
    `const send = (message) => { if (process.connected) process.send(message); };`,
    `const isStreaming = (r) => typeof r.body === "object" && r.body !== null && r.body.stream === true;`,
    `const view = (r) => ({`,
    `  id: r.id, token: r.token ?? null, isStreaming: isStreaming(r), messages: JSON.stringify(r.body?.messages ?? null),`,
    `  startedAt: abs(r.startedAt), socketClosedAt: abs(r.socketClosedAt), chunkTimes: isStreaming(r) ? r.chunkTimes.map(abs) : [],`,
    `  cancelCalls: r.cancelCalls, status: r.status,`,
    `});`,
    `const since = (afterId) => provider.requests.slice(afterId);`,
    `const cancelsOf = (requests) => { const tokens = new Set(requests.map((r) => r.token).filter(Boolean)); return provider.cancels.filter((c) => tokens.has(c.token)); };`,
    `const snapshot = (afterId, isTimedOut = false) => {`,
    `  const requests = since(afterId);`,
    `  return { requestCount: provider.requests.length, requests: requests.map(view), cancels: cancelsOf(requests).map((c) => ({ token: c.token, at: abs(c.at) })), isTimedOut };`,
    `};`,
    `const holds = (w) => {`,
    `  const requests = since(w.afterId);`,
    `  if (w.kind === "streaming") return requests.filter((r) => isStreaming(r) && r.socketClosedAt === undefined && r.chunkTimes.length >= w.chunks).length >= w.count;`,
    `  return requests.every((r) => r.socketClosedAt !== undefined) && cancelsOf(requests).length >= w.cancels;`,
    `};`,
    // Waits are checked every millisecond while any is pending (the state has no change events);
    // this only delays when the parent hears of it, never a time the child records.
    `const waits = new Set();`,
    `let timer;`,
    `const check = () => {`,
    `  for (const w of waits) {`,
    `    const isTimedOut = performance.now() > w.expiresAt;`,
    `    if (holds(w) || isTimedOut) { waits.delete(w); send({ type: "answer", ticket: w.ticket, snapshot: snapshot(w.afterId, !holds(w)) }); }`,
    `  }`,
    `  if (waits.size === 0 && timer !== undefined) { clearInterval(timer); timer = undefined; }`,
    `};`,
    `process.on("message", (message) => {`,
    `  if (message.type === "ping") return send({ type: "answer", ticket: message.ticket, at: abs(performance.now()) });`,
    `  if (message.type === "snapshot") return send({ type: "answer", ticket: message.ticket, snapshot: snapshot(message.afterId) });`,
    `  waits.add({ ...message, expiresAt: performance.now() + message.timeoutMs });`,
    `  check();`,
    `  if (waits.size > 0 && timer === undefined) timer = setInterval(check, 1);`,
    `});`,
    // Ends with its parent (the IPC channel closes) and in any case within ten minutes.
    `process.on("disconnect", () => { provider.close().finally(() => process.exit(0)); });`,
    `setTimeout(() => process.exit(0), 600000).unref();`,
    `send({ type: "ready", url: provider.url, cancelUrl: provider.cancelUrl });`,
  ].join("\n");
}

/** Starts the test provider in a child process (`node -e`, ESM, with an IPC channel) playing `scenario`. */
export async function startPlanProvider(scenario: TestProviderScenario): Promise<PlanProvider> {
  const moduleUrl = new URL("../src/testing/index.js", import.meta.url).href;
  const child: ChildProcess = spawn(process.execPath, ["--input-type=module", "-e", childScript(moduleUrl, scenario)], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = once(child, "exit");
  const answers = new Map<number, (message: Extract<ChildMessage, { type: "answer" }>) => void>();
  let nextTicket = 0;
  const ready = await withTimeout(
    new Promise<{ url: string; cancelUrl: string }>((resolve, reject) => {
      child.on("message", (raw) => {
        const message = raw as ChildMessage;
        if (message.type === "ready") return resolve(message);
        const answer = answers.get(message.ticket);
        answers.delete(message.ticket);
        answer?.(message);
      });
      child.once("exit", (code) => reject(new Error(`provider child exited with ${code}`)));
    }),
    20_000,
    "the provider child to listen",
  );
  const ask = (message: ParentMessage): Promise<Extract<ChildMessage, { type: "answer" }>> =>
    new Promise((resolve) => {
      answers.set(message.ticket, resolve);
      child.send(message);
    });
  const snapshot = async (afterId: number): Promise<PlanSnapshot> =>
    (await withTimeout(ask({ type: "snapshot", ticket: ++nextTicket, afterId }), 5_000, "a snapshot")).snapshot!;
  const waitFor = async (wait: Wait, timeoutMs: number): Promise<PlanSnapshot> => {
    // The child answers at its own deadline; this bound only catches a child that stopped answering.
    const answer = await withTimeout(ask({ type: "wait", ticket: ++nextTicket, timeoutMs, ...wait }), timeoutMs + 5_000, `the provider child (${wait.kind})`);
    return answer.snapshot!;
  };
  return {
    url: ready.url,
    cancelUrl: ready.cancelUrl,
    snapshot,
    requestCount: async () => (await snapshot(Number.MAX_SAFE_INTEGER)).requestCount,
    waitForStreaming: ({ timeoutMs, ...wait }) => waitFor({ kind: "streaming", ...wait }, timeoutMs),
    waitForQuiet: ({ timeoutMs, ...wait }) => waitFor({ kind: "quiet", ...wait }, timeoutMs),
    clockOffset: (pings) => estimateClockOffset(pings, async () => (await withTimeout(ask({ type: "ping", ticket: ++nextTicket }), 2_000, "a pong")).at!),
    async close() {
      if (child.connected) child.disconnect();
      const hasExited = await withTimeout(exited, 5_000, "the provider child to exit").then(
        () => true,
        () => false,
      );
      if (!hasExited) child.kill();
    },
  };
}
