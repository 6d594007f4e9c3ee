/**
 * One client process of the many-streams benchmark: `node many-streams-client.js <server url>`.
 * On its parent's word it creates runs (a thread and a run each) and holds one SSE connection
 * per run (plain `node:http`, a socket each), and counts, for every `message.delta`, the delay
 * from the chunk's stamp (the absolute time the server's model wrote it, moved onto this
 * process's clock with the offset its parent measured) to the moment its bytes were read here.
 */
import { Agent, request, type IncomingMessage } from "node:http";
import { absoluteNow } from "./absolute-clock.js";
import { DelayHistogram, type SparseCounts } from "./delay-histogram.js";

/** What the parent asks. */
export type ManyStreamsClientRequest =
  | { type: "ping" }
  | { type: "offset"; serverMinusClientMs: number }
  | { type: "open"; count: number }
  | { type: "window-start" }
  | { type: "window-end" }
  | { type: "status" };

/** How this client's streams stand. */
export interface ClientStatus {
  /** Streams that received their first delta and have not ended. */
  streaming: number;
  completed: number;
  /** Streams that failed, or ended without `run.completed`. */
  broken: number;
  failedCreates: number;
  /** The first problems, for the report. */
  problems: string[];
}

/** What the client says. */
export type ManyStreamsClientMessage =
  | { type: "pong"; at: number }
  | { type: "opened"; created: number; seconds: number; status: ClientStatus }
  | { type: "window"; counts: SparseCounts; chunks: number; status: ClientStatus }
  | { type: "status"; status: ClientStatus };

/** Creates in flight per client (4 clients: 32 at once). */
const CREATE_CONCURRENCY = 8;

const [url] = process.argv.slice(2) as [string];
// Idle sockets are closed here before the server's keep-alive timeout (5 s) could close one as a create goes out on it.
const createAgent = new Agent({ keepAlive: true, maxSockets: CREATE_CONCURRENCY, timeout: 2_000 });
const histogram = new DelayHistogram();
let serverMinusClientMs = 0;
let isWindowOpen = false;
let windowChunks = 0;
const status: ClientStatus = { streaming: 0, completed: 0, broken: 0, failedCreates: 0, problems: [] };

function problem(text: string): void {
  if (status.problems.length < 10) status.problems.push(text.slice(0, 300));
}

function postJson(path: string, body: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const outgoing = request(`${url}${path}`, { method: "POST", agent: createAgent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => {
        if (response.statusCode === 201) resolve(JSON.parse(text) as Record<string, unknown>);
        else reject(new Error(`POST ${path} answered ${response.statusCode}: ${text.slice(0, 200)}`));
      });
      response.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(payload);
  });
}

/**
 * Reads one run's events until the server ends the response: `connected` settles with the
 * response's headers, `firstDelta` with the first delta (both reject if the stream broke first).
 */
function follow(runId: string): { connected: Promise<void>; firstDelta: Promise<void> } {
  let resolveConnected: () => void = () => {};
  let rejectConnected: (error: Error) => void = () => {};
  const connected = new Promise<void>((resolve, reject) => {
    resolveConnected = resolve;
    rejectConnected = reject;
  });
  const firstDelta = new Promise<void>((resolveFirst, rejectFirst) => {
    const openedAt = performance.now();
    let deltas = 0;
    let isStreaming = false;
    let isSettled = false;
    let lastType = "";
    const settle = (outcome: "completed" | "broken", why?: string): void => {
      if (isSettled) return;
      isSettled = true;
      if (isStreaming) status.streaming--;
      if (outcome === "completed") status.completed++;
      else {
        status.broken++;
        problem(`${runId}: ${why} (${deltas} deltas, ${Math.round(performance.now() - openedAt)} ms after the request)`);
      }
      rejectConnected(new Error(why ?? "ended before its first delta"));
      rejectFirst(new Error(why ?? "ended before its first delta"));
    };
    const onResponse = (response: IncomingMessage): void => {
      resolveConnected();
      if (response.statusCode !== 200) {
        response.resume();
        return settle("broken", `events answered ${response.statusCode}`);
      }
      response.setEncoding("utf8");
      let partial = "";
      response.on("data", (chunk: string) => {
        const readAt = absoluteNow();
        partial += chunk;
        for (let end = partial.indexOf("\n\n"); end >= 0; end = partial.indexOf("\n\n")) {
          const frame = partial.slice(0, end);
          partial = partial.slice(end + 2);
          const dataAt = frame.indexOf("data: ");
          if (dataAt < 0) continue;
          const event = JSON.parse(frame.slice(dataAt + 6)) as { type: string; text?: string };
          lastType = event.type;
          if (event.type !== "message.delta") continue;
          deltas++;
          if (!isStreaming) {
            isStreaming = true;
            status.streaming++;
            resolveFirst();
          }
          if (!isWindowOpen) continue;
          histogram.add(readAt - (Number.parseFloat(event.text!) - serverMinusClientMs));
          windowChunks++;
        }
      });
      response.on("end", () => settle(lastType === "run.completed" ? "completed" : "broken", `ended after ${lastType || "nothing"}`));
      response.on("error", (error) => settle("broken", error.message));
    };
    const outgoing = request(`${url}/v1/runs/${runId}/events`, { agent: false, headers: { accept: "text/event-stream" } }, onResponse);
    outgoing.on("error", (error) => settle("broken", error.message));
    outgoing.end();
  });
  return { connected, firstDelta };
}

/** Creates `count` runs and follows each; resolves once each one streams or failed. */
async function open(count: number): Promise<number> {
  let next = 0;
  let created = 0;
  const firstDeltas: Promise<void>[] = [];
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      try {
        const thread = await postJson("/v1/threads", {});
        const run = await postJson(`/v1/threads/${String(thread.thread_id)}/runs`, { input: { role: "user", content: "Stream." } });
        created++;
        const stream = follow(String(run.run_id));
        firstDeltas.push(stream.firstDelta.catch(() => undefined));
        // Connections are opened as many at a time as creates: a burst of connects would overflow
        // the server's accept queue (511), and a connection it never accepted is reset.
        await stream.connected.catch(() => undefined);
      } catch (error) {
        status.failedCreates++;
        problem(error instanceof Error ? error.message : String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
  await Promise.all(firstDeltas);
  return created;
}

const send = (message: ManyStreamsClientMessage): void => {
  if (process.connected) process.send!(message);
};

process.on("message", (message: ManyStreamsClientRequest) => {
  switch (message.type) {
    case "ping":
      return send({ type: "pong", at: absoluteNow() });
    case "offset":
      serverMinusClientMs = message.serverMinusClientMs;
      return;
    case "open": {
      const startedAt = performance.now();
      void open(message.count).then((created) => send({ type: "opened", created, seconds: (performance.now() - startedAt) / 1000, status }));
      return;
    }
    case "window-start":
      histogram.reset();
      windowChunks = 0;
      isWindowOpen = true;
      return;
    case "window-end":
      isWindowOpen = false;
      return send({ type: "window", counts: histogram.toSparse(), chunks: windowChunks, status });
    case "status":
      return send({ type: "status", status });
  }
});
process.once("disconnect", () => process.exit(0));
setTimeout(() => process.exit(0), 600_000).unref();
