import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createId } from "../src/core/index.js";
import { createDemoModel, silentLogger, type ChatModel } from "../src/runtime/index.js";
import { startTidemark, type Tidemark } from "../src/start-tidemark.js";
import { createTempDir, requestJson } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult } from "./benchmark.js";
import { consumeSse, type SseConsumption } from "./consume-sse.js";
import { median, round } from "./statistics.js";

const WORDS = 50_000;
const REPETITIONS = 5;
const PROMPT = "Stream as fast as you can.";

/** One repetition of one path: deltas delivered and the time and CPU it took. */
interface Sample {
  deltasPerSecond: number;
  cpuMicrosPerDelta: number;
  elapsedMs: number;
}

/**
 * The raw baseline: the same generator written straight to a bare node:http SSE response, one
 * `res.write` per chunk with an id/event/data frame shaped like Tidemark's, honouring backpressure.
 */
async function startRawServer(model: ChatModel): Promise<{ url: string; close(): Promise<void> }> {
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const controller = new AbortController();
    response.on("close", () => controller.abort());
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    const runId = createId("run");
    const messageId = createId("msg");
    let seq = 0;
    const write = async (type: string, fields: Record<string, unknown>): Promise<void> => {
      seq++;
      const frame = `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ type, run_id: runId, ...fields, seq })}\n\n`;
      if (!response.write(frame)) await once(response, "drain", { signal: controller.signal });
    };
    try {
      for await (const part of model.stream({ messages: [{ role: "user", content: PROMPT }] }, { signal: controller.signal })) {
        if (part.type === "text-delta") await write("message.delta", { message_id: messageId, text: part.text });
      }
      await write("run.completed", { state_version: 0, published_message_id: messageId });
    } finally {
      response.end();
      request.resume();
    }
  };
  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/stream`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function sampleOf(consumption: SseConsumption, startedAt: number, cpu: NodeJS.CpuUsage): Sample {
  if (consumption.status !== 200) throw new Error(`events answered ${consumption.status}`);
  if (consumption.deltas !== WORDS) throw new Error(`expected ${WORDS} deltas, got ${consumption.deltas} (last ${consumption.lastType})`);
  if (consumption.lastType !== "run.completed") throw new Error(`stream ended with ${consumption.lastType}`);
  const elapsedMs = consumption.endedAt - startedAt;
  return {
    deltasPerSecond: (consumption.deltas / elapsedMs) * 1000,
    cpuMicrosPerDelta: (cpu.user + cpu.system) / consumption.deltas,
    elapsedMs,
  };
}

async function rawRepetition(url: string): Promise<Sample> {
  const startedAt = performance.now();
  const cpu = process.cpuUsage();
  const consumption = await consumeSse(url);
  return sampleOf(consumption, startedAt, process.cpuUsage(cpu));
}

/** Executor → buffer → SSE → client: create a thread and a run over HTTP, then read its events. */
async function tidemarkRepetition(tidemark: Tidemark): Promise<Sample> {
  const post = (path: string, body: unknown) => requestJson<Record<string, unknown>>("POST", `${tidemark.url}${path}`, body, [201]);
  const startedAt = performance.now();
  const cpu = process.cpuUsage();
  const thread = await post("/v1/threads", {});
  const run = await post(`/v1/threads/${String(thread.thread_id)}/runs`, { input: { role: "user", content: PROMPT } });
  const consumption = await consumeSse(`${tidemark.url}/v1/runs/${String(run.run_id)}/events`);
  return sampleOf(consumption, startedAt, process.cpuUsage(cpu));
}

/** Deltas per second at full speed through Tidemark's stream path, against a bare node:http SSE writer. */
export const streamPath: Benchmark = {
  name: "stream-path",
  summary: `${WORDS.toLocaleString("en")} demo-model deltas at full speed: executor → buffer → SSE → fetch+parse, vs the same generator on bare node:http`,
  async run({ log }): Promise<BenchmarkResult> {
    const model = createDemoModel({ wordsPerSecond: 0, wordCount: WORDS });
    const temp = createTempDir("stream");
    const raw = await startRawServer(model);
    const tidemark = await startTidemark({ dbPath: join(temp.dir, "stream.db"), port: 0, model, logger: silentLogger });
    const rawSamples: Sample[] = [];
    const tidemarkSamples: Sample[] = [];
    try {
      // One unmeasured repetition of each warms the JIT and the connection pools.
      await rawRepetition(raw.url);
      await tidemarkRepetition(tidemark);
      for (let index = 0; index < REPETITIONS; index++) {
        // Alternate which path goes first, so drift in the machine's load hits both alike.
        if (index % 2 === 0) {
          rawSamples.push(await rawRepetition(raw.url));
          tidemarkSamples.push(await tidemarkRepetition(tidemark));
        } else {
          tidemarkSamples.push(await tidemarkRepetition(tidemark));
          rawSamples.push(await rawRepetition(raw.url));
        }
        log(`stream-path: repetition ${index + 1}/${REPETITIONS}`);
      }
    } finally {
      await tidemark.close();
      await raw.close();
      temp.remove();
    }
    const rate = (samples: Sample[]) => median(samples.map((sample) => sample.deltasPerSecond));
    const cpu = (samples: Sample[]) => median(samples.map((sample) => sample.cpuMicrosPerDelta));
    const rawRate = round(rate(rawSamples), 0);
    const rawCpu = round(cpu(rawSamples), 2);
    const ratio = rate(tidemarkSamples) / rate(rawSamples);
    return {
      figures: [
        { label: "raw node:http SSE deltas/s (median)", value: rawRate, unit: "deltas/s" },
        {
          ...compared({ label: "Tidemark deltas/s (median)", value: round(rate(tidemarkSamples), 0), unit: "deltas/s" }, { label: "raw", value: rawRate }),
          target: "≥ 50% of raw",
          isMet: ratio >= 0.5,
        },
        { label: "raw CPU per delta, server+client (median)", value: rawCpu, unit: "µs" },
        compared({ label: "Tidemark CPU per delta, server+client (median)", value: round(cpu(tidemarkSamples), 2), unit: "µs" }, { label: "raw", value: rawCpu }),
      ],
      details: {
        words: WORDS,
        repetitions: REPETITIONS,
        note: "server and client share this process; rates count from the first request to the end of the stream",
        raw: rawSamples.map(roundSample),
        tidemark: tidemarkSamples.map(roundSample),
      },
    };
  },
};

function roundSample(sample: Sample): Sample {
  return {
    deltasPerSecond: round(sample.deltasPerSecond, 0),
    cpuMicrosPerDelta: round(sample.cpuMicrosPerDelta, 2),
    elapsedMs: round(sample.elapsedMs, 1),
  };
}
