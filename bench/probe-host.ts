import { spawn } from "node:child_process";
import { estimateClockOffset, type ClockOffset } from "./absolute-clock.js";
import { withTimeout } from "./bench-support.js";
import { superviseChild, type ServeChild } from "./serve-child.js";

/**
 * A probe host: a child process that serves as `tidemark serve` does, with the demo model wrapped
 * so that it reports when a generation's AbortSignal aborted: the one moment the CLI cannot show.
 */

/** A probe host child: also reports, per prompt marker, when the generation's AbortSignal aborted. */
export interface ProbeChild extends ServeChild {
  /** Absolute time (child clock) the generation whose prompt holds `marker` was aborted. */
  abortedAt(marker: string, timeoutMs: number): Promise<number>;
  /** Child clock − this clock, from the fastest of `pings` IPC round trips. */
  clockOffset(pings: number): Promise<ClockOffset>;
}

type ProbeMessage = { type: "ready"; url: string } | { type: "aborted"; marker: string; at: number } | { type: "pong"; ticket: number; at: number };

/** Prompts carry a marker the probe host finds in the last user message. */
const MARKER = String.raw`\[bench \d+\]`;
let markers = 0;

/** A new marker to put in a prompt, for {@link ProbeChild.abortedAt}. */
export function nextProbeMarker(): string {
  return `[bench ${++markers}]`;
}

interface ProbeScriptOptions {
  role: "worker" | "all";
  dbPath?: string;
  databaseUrl?: string;
  schema?: string;
  outbox: string;
}

/**
 * The child's script: what `tidemark serve` does (startTidemark, the demo model from the
 * environment, the demo tools and their outbox, the JSON logger on stderr), except that the
 * model's `stream()` is wrapped to stamp its signal's abort with `performance.timeOrigin +
 * performance.now()` (sent over IPC a turn later, off the worker's path).
 */
function probeScript(options: ProbeScriptOptions): string {
  const module = (path: string) => JSON.stringify(new URL(path, import.meta.url).href);
  return [
    `const { startTidemark } = await import(${module("../src/start-tidemark.js")});`,
    `const { selectModel } = await import(${module("../src/models/index.js")});`,
    `const { createJsonLogger } = await import(${module("../src/runtime/index.js")});`,
    `const { createDemoOutbox } = await import(${module("../src/tools/demo-outbox.js")});`,
    `const { createDemoTools } = await import(${module("../src/tools/demo-tools.js")});`,
    `const options = ${JSON.stringify(options)};`,
    `const now = () => performance.timeOrigin + performance.now();`,
    `const send = (message) => { if (process.connected) process.send(message); };`,
    `const logger = createJsonLogger();`,
    `const inner = selectModel("demo", process.env);`,
    `const marker = new RegExp(${JSON.stringify(MARKER)});`,
    `const model = {`,
    `  id: inner.id,`,
    `  stream(request, streamOptions) {`,
    `    const lastUser = [...request.messages].reverse().find((message) => message.role === "user");`,
    `    const found = marker.exec(typeof lastUser?.content === "string" ? lastUser.content : "")?.[0];`,
    `    if (found) streamOptions.signal.addEventListener("abort", () => { const at = now(); setImmediate(() => send({ type: "aborted", marker: found, at })); }, { once: true });`,
    `    return inner.stream(request, streamOptions);`,
    `  },`,
    `  title: (message, titleOptions) => inner.title(message, titleOptions),`,
    `};`,
    `const outbox = createDemoOutbox(options.outbox);`,
    `const tidemark = await startTidemark({`,
    `  ...(options.databaseUrl ? { databaseUrl: options.databaseUrl, databaseSchema: options.schema } : { dbPath: options.dbPath }),`,
    `  role: options.role, port: 0, logger, model, tools: createDemoTools({ outbox }),`,
    `});`,
    `logger.info({ url: tidemark.url, role: options.role, worker_id: tidemark.runtime.workerId }, "probe host serving");`,
    `let isStopping = false;`,
    `const stop = () => { if (isStopping) return; isStopping = true; tidemark.close().then(() => { outbox.close(); process.exit(0); }, () => process.exit(1)); };`,
    `process.on("SIGTERM", stop);`,
    `process.on("disconnect", stop);`,
    `process.on("message", (message) => { if (message.type === "ping") send({ type: "pong", ticket: message.ticket, at: now() }); });`,
    `setTimeout(() => process.exit(1), 600000).unref();`,
    `send({ type: "ready", url: tidemark.url });`,
  ].join("\n");
}

/** Starts a probe host: `role` over SQLite (`dbPath`) or PostgreSQL (`databaseUrl` + `schema`). */
export async function startProbeHost(options: ProbeScriptOptions & { name: string; env?: Record<string, string> }): Promise<ProbeChild> {
  const { name, env, ...scriptOptions } = options;
  const child = spawn(process.execPath, ["--input-type=module", "-e", probeScript(scriptOptions)], {
    stdio: ["ignore", "ignore", "pipe", "ipc"],
    env: { ...process.env, ...env },
  });
  const aborts = new Map<string, number>();
  const abortWaiters = new Map<string, (at: number) => void>();
  const pongs = new Map<number, (at: number) => void>();
  let ticket = 0;
  const ready = new Promise<string>((resolve) => {
    child.on("message", (message: ProbeMessage) => {
      if (message.type === "ready") resolve(message.url);
      else if (message.type === "aborted") {
        aborts.set(message.marker, message.at);
        abortWaiters.get(message.marker)?.(message.at);
        abortWaiters.delete(message.marker);
      } else if (message.type === "pong") {
        pongs.get(message.ticket)?.(message.at);
        pongs.delete(message.ticket);
      }
    });
  });
  const ping = () => {
    const id = ++ticket;
    const pong = new Promise<number>((resolve) => pongs.set(id, resolve));
    child.send({ type: "ping", ticket: id });
    return withTimeout(pong, 2_000, "a pong");
  };
  const served = await superviseChild(name, child, ready);
  return {
    ...served,
    abortedAt(marker, timeoutMs) {
      const known = aborts.get(marker);
      if (known !== undefined) return Promise.resolve(known);
      return withTimeout(new Promise<number>((resolve) => abortWaiters.set(marker, resolve)), timeoutMs, `the abort of ${marker}`);
    },
    clockOffset: (pings) => estimateClockOffset(pings, ping),
  };
}
