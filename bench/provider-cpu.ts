import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { streamText } from "ai";
import { createParser } from "eventsource-parser";
import { createOpenAICompatibleModel, fromAISDKModel } from "../src/models/index.js";
import type { ChatModel } from "../src/runtime/index.js";
import { withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { median, round } from "./statistics.js";

/** Chunks per stream; the provider writes them as fast as the socket takes them. */
const CHUNKS = 20_000;
const SCENARIO = { chunks: CHUNKS, intervalMs: 0 };
const WARMUP_ROUNDS = 2;
const MEASURED_ROUNDS = 5;
const STREAM_TIMEOUT_MS = 20_000;
const PROMPT = "Stream as fast as you can.";
/** The text the provider streams: chunk i is `w<i> `. */
const EXPECTED_TEXT_LENGTH = Array.from({ length: CHUNKS }, (_, index) => `w${index} `.length).reduce((sum, length) => sum + length, 0);

/** What one read of the stream delivered. */
interface Read {
  deltas: number;
  textLength: number;
}

type PathName = "drain" | "bare" | "lean" | "adapter" | "doStream" | "streamText";

interface Path {
  name: PathName;
  label: string;
  read(): Promise<Read>;
}

/**
 * The test provider in a child process, so its CPU is not this process's. The child also serves
 * a replay of one full answer written at once (`replayUrl`), so the client reads many chunks
 * per socket read and the parsing cost is not hidden behind the per-read cost. Prints both URLs.
 */
async function startProviderChild(): Promise<{ url: string; replayUrl: string; close(): Promise<void> }> {
  const moduleUrl = new URL("../src/testing/index.js", import.meta.url).href;
  const script = [
    `import http from "node:http";`,
    `const { startTestProvider } = await import(${JSON.stringify(moduleUrl)});`,
    `const provider = await startTestProvider({ scenario: ${JSON.stringify(SCENARIO)} });`,
    `const recorded = await fetch(provider.url + "/chat/completions", ${JSON.stringify({ method: "POST", headers: { "content-type": "application/json" }, body: requestBody() })});`,
    `const answer = await recorded.text();`,
    `const replay = http.createServer((request, response) => {`,
    `  request.resume();`,
    `  request.once("end", () => { response.writeHead(200, { "content-type": "text/event-stream" }); response.end(answer); });`,
    `});`,
    `await new Promise((resolve) => replay.listen(0, "127.0.0.1", resolve));`,
    `process.stdout.write(JSON.stringify({ url: provider.url, replayUrl: "http://127.0.0.1:" + replay.address().port + "/v1" }) + "\\n");`,
    // Ends with its parent (stdin closes) and in any case within two minutes.
    `process.stdin.on("end", () => { replay.closeAllConnections(); replay.close(); provider.close().finally(() => process.exit(0)); });`,
    `process.stdin.resume();`,
    `setTimeout(() => process.exit(0), 120000).unref();`,
  ].join("\n");
  const child: ChildProcess = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = once(child, "exit");
  const urls = await withTimeout(
    new Promise<{ url: string; replayUrl: string }>((resolve, reject) => {
      let output = "";
      child.stdout!.setEncoding("utf8");
      child.stdout!.on("data", (text: string) => {
        output += text;
        const newline = output.indexOf("\n");
        if (newline >= 0) resolve(JSON.parse(output.slice(0, newline)) as { url: string; replayUrl: string });
      });
      child.once("exit", (code) => reject(new Error(`provider child exited with ${code}`)));
    }),
    20_000,
    "the provider child's URLs",
  );
  return {
    ...urls,
    async close() {
      child.stdin!.end();
      const hasExited = await withTimeout(exited, 5_000, "the provider child to exit").then(
        () => true,
        () => false,
      );
      if (!hasExited) child.kill();
    },
  };
}

/** The same request body the lean reader sends. */
function requestBody(): string {
  return JSON.stringify({ model: "m", messages: [{ role: "user", content: PROMPT }], stream: true, stream_options: { include_usage: true } });
}

function requestInit(): RequestInit {
  return { method: "POST", headers: { "content-type": "application/json" }, body: requestBody() };
}

async function post(baseURL: string): Promise<ReadableStream<Uint8Array>> {
  const response = await fetch(`${baseURL}/chat/completions`, requestInit());
  if (response.status !== 200 || !response.body) throw new Error(`provider answered ${response.status}`);
  return response.body;
}

/** Second baseline: fetch and read the bytes, no parsing (the transport's own cost). */
async function readDrain(baseURL: string): Promise<Read> {
  const reader = (await post(baseURL)).getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
  }
  if (bytes === 0) throw new Error("no bytes");
  return { deltas: CHUNKS, textLength: EXPECTED_TEXT_LENGTH };
}

/** The baseline: fetch + eventsource-parser + JSON.parse of each data line. */
async function readBare(baseURL: string): Promise<Read> {
  const read: Read = { deltas: 0, textLength: 0 };
  const parser = createParser({
    onEvent(event) {
      if (event.data === "[DONE]") return;
      const chunk = JSON.parse(event.data) as { choices?: { delta?: { content?: string | null } }[] };
      const text = chunk.choices?.[0]?.delta?.content;
      if (text) {
        read.deltas++;
        read.textLength += text.length;
      }
    },
  });
  const decoder = new TextDecoder();
  const reader = (await post(baseURL)).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  return read;
}

async function readChatModel(model: ChatModel): Promise<Read> {
  const read: Read = { deltas: 0, textLength: 0 };
  const signal = new AbortController().signal;
  for await (const part of model.stream({ messages: [{ role: "user", content: PROMPT }] }, { signal })) {
    if (part.type === "text-delta") {
      read.deltas++;
      read.textLength += part.text.length;
    }
  }
  return read;
}

function createPaths(baseURL: string): Path[] {
  const aiSdk = createOpenAICompatible({ name: "bench", baseURL });
  const lean = createOpenAICompatibleModel({ model: "m", baseURL });
  const adapter = fromAISDKModel(aiSdk.chatModel("m"));
  return [
    { name: "drain", label: "drain only (fetch, read bytes)", read: () => readDrain(baseURL) },
    { name: "bare", label: "bare reader (fetch + eventsource-parser + JSON.parse)", read: () => readBare(baseURL) },
    { name: "lean", label: "Tidemark lean reader (createOpenAICompatibleModel)", read: () => readChatModel(lean) },
    { name: "adapter", label: "Tidemark AI SDK adapter (fromAISDKModel)", read: () => readChatModel(adapter) },
    {
      name: "doStream",
      label: "AI SDK doStream (openai-compatible)",
      async read() {
        const read: Read = { deltas: 0, textLength: 0 };
        const { stream } = await aiSdk.chatModel("m").doStream({ prompt: [{ role: "user", content: [{ type: "text", text: PROMPT }] }] });
        const reader = stream.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (value.type === "text-delta") {
            read.deltas++;
            read.textLength += value.delta.length;
          } else if (value.type === "error") throw value.error;
        }
        return read;
      },
    },
    {
      name: "streamText",
      label: "AI SDK streamText (textStream)",
      async read() {
        const read: Read = { deltas: 0, textLength: 0 };
        let failure: unknown;
        const result = streamText({ model: aiSdk.chatModel("m"), prompt: PROMPT, maxRetries: 0, onError: ({ error }) => void (failure ??= error) });
        for await (const text of result.textStream) {
          read.deltas++;
          read.textLength += text.length;
        }
        if (failure !== undefined) throw failure;
        return read;
      },
    },
  ];
}

interface Sample {
  cpuMicrosPerDelta: number;
  elapsedMs: number;
}

async function measure(path: Path): Promise<Sample> {
  const startedAt = performance.now();
  const cpu = process.cpuUsage();
  const read = await withTimeout(path.read(), STREAM_TIMEOUT_MS, `${path.name} to read the stream`);
  const used = process.cpuUsage(cpu);
  const elapsedMs = performance.now() - startedAt;
  if (read.textLength !== EXPECTED_TEXT_LENGTH) throw new Error(`${path.name}: expected ${EXPECTED_TEXT_LENGTH} characters, got ${read.textLength}`);
  if (read.deltas !== CHUNKS && path.name !== "streamText") throw new Error(`${path.name}: expected ${CHUNKS} deltas, got ${read.deltas}`);
  // Per chunk the provider sent, so the paths share one denominator.
  return { cpuMicrosPerDelta: (used.user + used.system) / CHUNKS, elapsedMs };
}

type Mode = "paced" | "replay";

/** The figures of one mode: every path's median CPU per delta, as a ratio to the bare reader's. */
function modeFigures(mode: Mode, paths: readonly Path[], cpu: (name: PathName) => number): Figure[] {
  const prefix = mode === "paced" ? "" : "replay (one write): ";
  const bare = { label: `${prefix}bare reader`, value: round(cpu("bare"), 2) };
  const figures: Figure[] = [];
  for (const path of paths) {
    const label = `${prefix}${path.label} CPU/delta (median)`;
    if (path.name === "bare") {
      figures.push({ label, value: bare.value, unit: "µs" });
      continue;
    }
    const figure = compared({ label, value: round(cpu(path.name), 2), unit: "µs" }, bare);
    figures.push(path.name === "lean" ? { ...figure, target: "≤ 2× bare", isMet: cpu("lean") <= 2 * cpu("bare") } : figure);
  }
  return figures;
}

/** CPU per streamed delta of reading one OpenAI-compatible stream through each client. */
export const providerCpu: Benchmark = {
  name: "provider-cpu",
  summary: `CPU per delta reading ${CHUNKS.toLocaleString("en")} OpenAI-compatible chunks (provider in a child process): lean reader, AI SDK adapter, doStream, streamText vs a bare fetch + eventsource-parser + JSON.parse reader`,
  async run({ log }): Promise<BenchmarkResult> {
    const provider = await startProviderChild();
    const modes: Record<Mode, { paths: Path[]; samples: Map<PathName, Sample[]> }> = {
      paced: { paths: createPaths(provider.url), samples: new Map() },
      replay: { paths: createPaths(provider.replayUrl), samples: new Map() },
    };
    try {
      for (const [mode, { paths, samples }] of Object.entries(modes) as [Mode, (typeof modes)[Mode]][]) {
        for (const path of paths) samples.set(path.name, []);
        for (let round = 0; round < WARMUP_ROUNDS; round++) for (const path of paths) await measure(path);
        for (let round = 0; round < MEASURED_ROUNDS; round++) {
          // Rotate which path goes first, so drift in the machine's load hits all alike.
          for (let offset = 0; offset < paths.length; offset++) {
            const path = paths[(round + offset) % paths.length]!;
            samples.get(path.name)!.push(await measure(path));
          }
        }
        log(`provider-cpu: ${mode}: ${WARMUP_ROUNDS} warm-up and ${MEASURED_ROUNDS} measured rounds done`);
      }
    } finally {
      await provider.close();
    }
    const cpuOf = (mode: Mode) => (name: PathName) => median(modes[mode].samples.get(name)!.map((sample) => sample.cpuMicrosPerDelta));
    // The lean reader over the bare reader with the transport's own cost (drain only) subtracted from both.
    const netRatio = (mode: Mode) => {
      const cpu = cpuOf(mode);
      return round((cpu("lean") - cpu("drain")) / (cpu("bare") - cpu("drain")), 2);
    };
    return {
      figures: [...modeFigures("paced", modes.paced.paths, cpuOf("paced")), ...modeFigures("replay", modes.replay.paths, cpuOf("replay"))],
      details: {
        chunks: CHUNKS,
        rounds: { warmup: WARMUP_ROUNDS, measured: MEASURED_ROUNDS },
        note:
          "provider runs in a child process; CPU is this process's user+system (process.cpuUsage) over one whole request, divided by the chunks sent. " +
          "paced: the test provider writes one chunk per event-loop turn (about one socket read per chunk); replay: the same answer written at once.",
        leanOverBareNetOfDrain: { paced: netRatio("paced"), replay: netRatio("replay") },
        samples: Object.fromEntries(
          (Object.keys(modes) as Mode[]).map((mode) => [
            mode,
            Object.fromEntries(
              [...modes[mode].samples].map(([name, list]) => [
                name,
                list.map((sample) => ({ cpuMicrosPerDelta: round(sample.cpuMicrosPerDelta, 2), elapsedMs: round(sample.elapsedMs, 1) })),
              ]),
            ),
          ]),
        ),
      },
    };
  },
};
