import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTempDir, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult } from "./benchmark.js";
import { cpuSince, takeCpuSnapshot, type AccountedProcess } from "./cpu-accounting.js";
import type { SessionsMessage, SessionsMode, SessionsRequest } from "./live-sessions-client.js";
import type { ServerChildMessage, ServerChildRequest } from "./live-server-child.js";
import { startPlanProvider, type PlanProvider } from "./plan-provider.js";
import { superviseChild, type ChildReport, stopAndReport, type ServeChild } from "./serve-child.js";
import { median, round } from "./statistics.js";

/*
 * 200 concurrent live sessions in one server process (issue 15): an embedded Tidemark in a child
 * process of its own (live-server-child.ts), the provider in another, and the clients in two more
 * (live-sessions-client.ts). Each session's one turn streams a long answer, every delta acked.
 * Reported: the server's RSS idle, while every session streams, and after they closed, and its
 * CPU (process.cpuUsage) per output.delta frame over a fixed window. Baseline, in the same run on
 * a fresh server process: as many runs of the same agent, each with one SSE subscriber
 * (GET /v1/runs/{id}/events), per message.delta event.
 */

const SESSIONS = 200;
const CLIENT_CHILDREN = 2;
/**
 * 2,000 chunks (a word each), one every 200 ms: about the pace of speech, and longer than a phase
 * lasts; 1,000 deltas/s from the 200 sessions together.
 */
const SCENARIO = { chunks: 2_000, intervalMs: 200 };
const IDLE_SETTLE_MS = 1_000;
/** Once every session streams, before the window opens. */
const SETTLE_MS = 2_000;
const WINDOW_MS = 10_000;
const OPEN_TIMEOUT_MS = 90_000;
const CLOSE_TIMEOUT_MS = 60_000;

const SERVER_CHILD = fileURLToPath(new URL("./live-server-child.js", import.meta.url));
const CLIENT_CHILD = fileURLToPath(new URL("./live-sessions-client.js", import.meta.url));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends requests to a child over IPC; `ask` resolves with the first answer that `matches`, within `timeoutMs`. */
function ipcOf<Request, Answer>(child: ChildProcess) {
  const waiters = new Set<{ matches: (answer: Answer) => boolean; resolve: (answer: Answer) => void }>();
  child.on("message", (raw) => {
    for (const waiter of waiters) {
      if (!waiter.matches(raw as Answer)) continue;
      waiters.delete(waiter);
      waiter.resolve(raw as Answer);
    }
  });
  return (request: Request, matches: (answer: Answer) => boolean, timeoutMs: number, what: string): Promise<Answer> => {
    const answer = new Promise<Answer>((resolve) => waiters.add({ matches, resolve }));
    child.send(request as object);
    return withTimeout(answer, timeoutMs, what);
  };
}

type Usage = Extract<ServerChildMessage, { type: "usage" }>;
type Counts = Extract<SessionsMessage, { type: "count" }>;
let tickets = 0;

/** The server child: supervised (its stderr, a draining stop), and its usage on demand. */
async function startServer(provider: PlanProvider, dbPath: string): Promise<{ child: ServeChild; usage(gc?: boolean): Promise<Usage> }> {
  const serverProcess = spawn(process.execPath, ["--expose-gc", SERVER_CHILD, provider.url, provider.cancelUrl, dbPath], { stdio: ["ignore", "ignore", "pipe", "ipc"] });
  const ready = new Promise<string>((resolve) => serverProcess.on("message", (message: ServerChildMessage) => message.type === "ready" && resolve(message.url)));
  const child = await superviseChild("live-sessions server", serverProcess, ready);
  const ask = ipcOf<ServerChildRequest, ServerChildMessage>(serverProcess);
  return {
    child,
    async usage(gc = false) {
      const ticket = ++tickets;
      return (await ask({ type: "usage", ticket, gc }, (answer) => answer.type === "usage" && answer.ticket === ticket, 10_000, "the server's usage")) as Usage;
    },
  };
}

/** A client child with `count` sessions (or SSE streams). */
function startClients(mode: SessionsMode, url: string, count: number) {
  const child = spawn(process.execPath, [CLIENT_CHILD, mode, url, String(count)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const ask = ipcOf<SessionsRequest, SessionsMessage>(child);
  const failed = new Promise<never>((_, reject) => {
    child.on("message", (message: SessionsMessage) => message.type === "failed" && reject(new Error(`a ${mode} client child failed: ${message.error}`)));
    child.once("exit", (code) => reject(new Error(`a ${mode} client child exited with ${code}`)));
  });
  failed.catch(() => {});
  const guarded = <T>(answer: Promise<T>) => Promise.race([answer, failed]);
  return {
    pid: child.pid!,
    open: () => guarded(ask({ type: "open" }, (answer) => answer.type === "streaming", OPEN_TIMEOUT_MS, `${count} ${mode} sessions to stream`)),
    count: () => {
      const ticket = ++tickets;
      return guarded(ask({ type: "count", ticket }, (answer) => answer.type === "count" && answer.ticket === ticket, 10_000, "the clients' counts")) as Promise<Counts>;
    },
    close: () => guarded(ask({ type: "close" }, (answer) => answer.type === "closed", CLOSE_TIMEOUT_MS, `${count} ${mode} sessions to end`)) as Promise<Extract<SessionsMessage, { type: "closed" }>>,
    kill: () => child.kill(),
  };
}

/** Sums the clients' counts. */
async function countAll(clients: readonly ReturnType<typeof startClients>[]) {
  const counts = await Promise.all(clients.map((client) => client.count()));
  return {
    deltas: counts.reduce((total, count) => total + count.deltas, 0),
    acks: counts.reduce((total, count) => total + count.acks, 0),
    activeSessions: counts.reduce((total, count) => total + count.activeSessions, 0),
    cpuMicros: counts.reduce((total, count) => total + count.cpuMicros, 0),
  };
}

/** One phase on a fresh server: idle, SESSIONS streaming through a WINDOW_MS window, then all closed. */
async function measurePhase(mode: SessionsMode, provider: PlanProvider, log: (message: string) => void) {
  const temp = createTempDir(`live-sessions-${mode}`);
  const server = await startServer(provider, join(temp.dir, "sessions.db"));
  const clients: ReturnType<typeof startClients>[] = [];
  try {
    await sleep(IDLE_SETTLE_MS);
    const idle = await server.usage(true);
    for (let index = 0; index < CLIENT_CHILDREN; index++) clients.push(startClients(mode, server.child.url, SESSIONS / CLIENT_CHILDREN));
    const openedAt = performance.now();
    await Promise.all(clients.map((client) => client.open()));
    const openSeconds = (performance.now() - openedAt) / 1000;
    log(`live-sessions: ${mode}: ${SESSIONS} streaming after ${round(openSeconds, 1)} s`);
    await sleep(SETTLE_MS);
    await countAll(clients);
    const accounted: AccountedProcess[] = [{ name: "server", pid: server.child.pid }, ...clients.map((client, index) => ({ name: `clients ${index + 1}`, pid: client.pid }))];
    const machineBefore = takeCpuSnapshot(accounted);
    const start = { server: await server.usage(), clients: await countAll(clients), at: performance.now() };
    const rss: number[] = [];
    while (performance.now() - start.at < WINDOW_MS) {
      await sleep(1_000);
      rss.push((await server.usage()).rssBytes);
    }
    const end = { server: await server.usage(), clients: await countAll(clients), at: performance.now() };
    const machine = cpuSince(machineBefore, accounted);
    const closed = await Promise.all(clients.map((client) => client.close()));
    await sleep(IDLE_SETTLE_MS);
    const afterClose = await server.usage(true);
    const seconds = (end.at - start.at) / 1000;
    const frames = end.clients.deltas - start.clients.deltas;
    const endings: Record<string, number> = {};
    for (const { endings: some } of closed) for (const [ending, count] of Object.entries(some)) endings[ending] = (endings[ending] ?? 0) + count;
    return {
      mode,
      openSeconds: round(openSeconds, 1),
      windowSeconds: round(seconds, 1),
      idleRssBytes: idle.rssBytes,
      idleHeapBytes: idle.heapUsedBytes,
      streamingRssBytes: median(rss),
      streamingRssMaxBytes: Math.max(...rss),
      streamingHeapBytes: end.server.heapUsedBytes,
      afterCloseRssBytes: afterClose.rssBytes,
      afterCloseHeapBytes: afterClose.heapUsedBytes,
      rssSamplesMb: rss.map((bytes) => round(bytes / 1e6, 1)),
      frames,
      framesPerSecond: frames / seconds,
      acks: end.clients.acks - start.clients.acks,
      sessionsActiveInWindow: end.clients.activeSessions,
      serverCpuMicrosPerFrame: (end.server.cpuMicros - start.server.cpuMicros) / frames,
      serverCores: (end.server.cpuMicros - start.server.cpuMicros) / 1e6 / seconds,
      clientCpuMicrosPerFrame: (end.clients.cpuMicros - start.clients.cpuMicros) / frames,
      machine,
      endings,
    };
  } finally {
    for (const client of clients) client.kill();
    const report: ChildReport = await stopAndReport(server.child, log);
    temp.remove();
    if (report.forced || (report.logs.counts.error ?? 0) > 0) log(`live-sessions: ${mode} server: ${JSON.stringify(report).slice(0, 500)}`);
  }
}

type Phase = Awaited<ReturnType<typeof measurePhase>>;
const mb = (bytes: number) => round(bytes / 1e6, 1);
const perSessionKb = (phase: Phase) => round((phase.streamingRssBytes - phase.idleRssBytes) / SESSIONS / 1e3, 1);

function describe(phase: Phase) {
  const { machine, ...rest } = phase;
  return {
    ...rest,
    idleRssMb: mb(phase.idleRssBytes),
    streamingRssMb: mb(phase.streamingRssBytes),
    afterCloseRssMb: mb(phase.afterCloseRssBytes),
    rssPerSessionKb: perSessionKb(phase),
    heapPerSessionKb: round((phase.streamingHeapBytes - phase.idleHeapBytes) / SESSIONS / 1e3, 1),
    serverCpuMicrosPerFrame: round(phase.serverCpuMicrosPerFrame, 2),
    clientCpuMicrosPerFrame: round(phase.clientCpuMicrosPerFrame, 2),
    serverCores: round(phase.serverCores, 3),
    framesPerSecond: round(phase.framesPerSecond, 0),
    cpuSecondsInWindow: machine.cpuSeconds,
    machineCpuBusyInWindow: machine.machineCpuBusy,
  };
}

/** 200 live sessions streaming in one server process: RSS and CPU per output.delta, against 200 SSE streams of runs. */
export const liveSessions: Benchmark = {
  name: "live-sessions",
  summary:
    `${SESSIONS} concurrent live sessions, each streaming a turn (every delta acked), in one server child (embedded, SQLite; clients in ${CLIENT_CHILDREN} other children): ` +
    `server RSS and CPU per output.delta frame over ${WINDOW_MS / 1000} s; baseline ${SESSIONS} runs with one SSE subscriber each, on a fresh server`,
  async run({ log }): Promise<BenchmarkResult> {
    const provider = await startPlanProvider(SCENARIO);
    let live: Phase;
    let sse: Phase;
    try {
      live = await measurePhase("live", provider, log);
      sse = await measurePhase("sse", provider, log);
    } finally {
      await provider.close();
    }
    return {
      figures: [
        compared({ label: "server RSS, idle (after a GC), live server", value: mb(live.idleRssBytes), unit: "MB" }, { label: "SSE server", value: mb(sse.idleRssBytes) }),
        compared({ label: `server RSS, ${SESSIONS} live sessions streaming (median over the window)`, value: mb(live.streamingRssBytes), unit: "MB" }, { label: `${SESSIONS} SSE streams`, value: mb(sse.streamingRssBytes) }),
        compared({ label: "server RSS above idle, per live session", value: perSessionKb(live), unit: "kB" }, { label: "per SSE stream", value: perSessionKb(sse) }),
        compared({ label: "server RSS after every session ended (after a GC)", value: mb(live.afterCloseRssBytes), unit: "MB" }, { label: "SSE server", value: mb(sse.afterCloseRssBytes) }),
        compared({ label: "server CPU per output.delta frame sent (one playback ack received each)", value: round(live.serverCpuMicrosPerFrame, 2), unit: "µs" }, { label: "per SSE message.delta", value: round(sse.serverCpuMicrosPerFrame, 2) }),
        compared({ label: `server CPU while ${SESSIONS} sessions stream`, value: round(live.serverCores, 3), unit: "cores" }, { label: "SSE", value: round(sse.serverCores, 3) }),
        compared({ label: "output.delta frames delivered per second, all sessions", value: round(live.framesPerSecond, 0), unit: "frames/s" }, { label: "SSE message.delta/s", value: round(sse.framesPerSecond, 0) }),
        {
          label: `sessions that received deltas during the window (live + SSE, of ${2 * SESSIONS})`,
          value: live.sessionsActiveInWindow + sse.sessionsActiveInWindow,
          unit: "sessions",
          target: `${2 * SESSIONS}`,
          isMet: live.sessionsActiveInWindow === SESSIONS && sse.sessionsActiveInWindow === SESSIONS,
        },
      ],
      details: {
        scenario: SCENARIO,
        sessions: SESSIONS,
        nominalFramesPerSecond: (SESSIONS * 1_000) / SCENARIO.intervalMs,
        clientChildren: CLIENT_CHILDREN,
        windowMs: WINDOW_MS,
        method:
          "each phase on a fresh `node --expose-gc live-server-child.js` (startTidemark on SQLite, the lean OpenAI-compatible reader with its cancel URL, maxConcurrentRuns 256): " +
          "idle usage after a GC; the client children open their sessions (POST a thread, connect the live socket, send a transcript; every output.delta acked with " +
          "playback played_chars = characters received) or SSE streams (POST a thread and a run, GET its events); once all stream, 2 s more, then a 10 s window: " +
          "process.cpuUsage() of the server at its ends over IPC, RSS every second; frames = deltas the clients received in the window. Closing: emergency_stop " +
          "and turn.ended per session, or POST cancel and the stream's end; usage again after a GC",
        live: describe(live),
        sse: describe(sse),
      },
    };
  },
};
