import { randomUUID } from "node:crypto";
import { readSseEvents, type SseMessage } from "../src/stream/index.js";
import { requestJson } from "./bench-support.js";

/*
 * The bench's clients of the four ways to stream a run (compat-stream, compat-stop): plain fetch +
 * `readSseEvents` (eventsource-parser) + one JSON.parse per frame, with no SDK in between, so
 * that what differs between the layers is the server's work. Each opens a run with `content` as
 * the user's message, counts the text deltas it receives and can press the layer's own Stop.
 */

/** The native SSE stream and the three compatibility layers. */
export type Layer = "native" | "openai" | "langgraph" | "ag-ui";

export const LAYERS: readonly Layer[] = ["native", "openai", "langgraph", "ag-ui"];

/** How the tables name each layer. */
export const LAYER_LABELS: Record<Layer, string> = {
  native: "native SSE (/v1/runs/{id}/events)",
  openai: "OpenAI Responses (POST /v1/responses, stream)",
  langgraph: "LangGraph (runs/stream, messages-tuple)",
  "ag-ui": "AG-UI (POST /ag-ui)",
};

/** One layer's stream of one run, read in the background. */
export interface LayerStream {
  /** Tidemark's run id (each layer says it in its own way). */
  readonly runId: string;
  /** Text deltas received so far. */
  readonly deltas: number;
  /** The last frame's type (`event:` or the data's `type`), once the stream ended normally. */
  readonly lastType: string | undefined;
  /** Resolves when the server ended the response (rejects if it failed; resolves if aborted). */
  readonly ended: Promise<void>;
  /** The layer's explicit Stop; resolves with the HTTP status once the reply was read. */
  stop(): Promise<number>;
  /** Drops the connection (AG-UI's own Stop is this, then the server's disconnect grace). */
  abort(): void;
}

interface Opened {
  /** The stream's SSE messages, from its first. */
  messages: AsyncIterable<SseMessage>;
  runId: string;
  /** The layer's Stop request: a POST to this path with an empty JSON object. */
  stopPath: string;
  /** Whether a parsed frame is a text delta, and its type. */
  classify(event: string, data: string): { type: string; isDelta: boolean };
}

async function post(url: string, body: unknown, signal: AbortSignal): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "text/event-stream" }, body: JSON.stringify(body), signal });
}

function checked(response: Response, what: string): Response {
  if (response.status !== 200 || !response.body) throw new Error(`${what} answered ${response.status}`);
  return response;
}

const typeOf = (data: string): string => (JSON.parse(data) as { type: string }).type;

async function openNative(base: string, content: string, signal: AbortSignal): Promise<Opened> {
  const thread = await requestJson<{ thread_id: string }>("POST", `${base}/v1/threads`, {}, [201]);
  const run = await requestJson<{ run_id: string }>("POST", `${base}/v1/threads/${thread.thread_id}/runs`, { input: { role: "user", content } }, [201]);
  const response = checked(await fetch(`${base}/v1/runs/${run.run_id}/events`, { headers: { accept: "text/event-stream" }, signal }), "events");
  return {
    messages: readSseEvents(response.body!, { signal }),
    runId: run.run_id,
    stopPath: `/v1/runs/${run.run_id}/cancel`,
    classify: (event, data) => {
      const type = typeOf(data);
      return { type, isDelta: type === "message.delta" };
    },
  };
}

/** OpenAI: the response id comes in the first event (`response.created`); `resp_<x>` is run `run_<x>`. */
async function openOpenAi(base: string, content: string, signal: AbortSignal): Promise<Opened> {
  const response = checked(await post(`${base}/v1/responses`, { model: "chat", input: content, stream: true, background: true }, signal), "POST /v1/responses");
  // The first frame is read here to learn the id; it is handed on with the rest.
  const reader = readSseEvents(response.body!, { signal });
  const first = await reader.next();
  if (first.done) throw new Error("the OpenAI stream ended before response.created");
  const created = JSON.parse(first.value.data) as { type: string; response: { id: string } };
  const responseId = created.response.id;
  return {
    messages: (async function* () {
      yield first.value;
      yield* reader;
    })(),
    runId: `run_${responseId.slice("resp_".length)}`,
    stopPath: `/v1/responses/${responseId}/cancel`,
    classify: (event, data) => {
      const type = typeOf(data);
      return { type, isDelta: type === "response.output_text.delta" };
    },
  };
}

async function openLangGraph(base: string, content: string, signal: AbortSignal): Promise<Opened> {
  const thread = await requestJson<{ thread_id: string }>("POST", `${base}/langgraph/threads`, {}, [200]);
  const body = { assistant_id: "chat", input: { messages: [{ type: "human", content }] }, stream_mode: ["messages-tuple"] };
  const response = checked(await post(`${base}/langgraph/threads/${thread.thread_id}/runs/stream`, body, signal), "runs/stream");
  // Content-Location: /threads/{t}/runs/{r}
  const runId = (response.headers.get("content-location") ?? "").split("/").pop() ?? "";
  return {
    messages: readSseEvents(response.body!, { signal }),
    runId,
    stopPath: `/langgraph/threads/${thread.thread_id}/runs/${runId}/cancel?wait=1&action=interrupt`,
    classify: (event, data) => {
      if (event !== "messages") return { type: event, isDelta: false };
      const [chunk] = JSON.parse(data) as [{ type: string }];
      return { type: event, isDelta: chunk.type === "AIMessageChunk" };
    },
  };
}

async function openAgUi(base: string, content: string, signal: AbortSignal): Promise<Opened> {
  const input = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: randomUUID(), role: "user", content }], tools: [], context: [], state: {}, forwardedProps: {} };
  const response = checked(await post(`${base}/ag-ui`, input, signal), "POST /ag-ui");
  const runId = response.headers.get("x-tidemark-run-id") ?? "";
  return {
    messages: readSseEvents(response.body!, { signal }),
    runId,
    stopPath: `/ag-ui/runs/${runId}/cancel`,
    classify: (event, data) => {
      const type = typeOf(data);
      return { type, isDelta: type === "TEXT_MESSAGE_CONTENT" };
    },
  };
}

const OPENERS: Record<Layer, (base: string, content: string, signal: AbortSignal) => Promise<Opened>> = {
  native: openNative,
  openai: openOpenAi,
  langgraph: openLangGraph,
  "ag-ui": openAgUi,
};

/** Starts a run through `layer` on the server at `base` and reads its stream in the background. */
export async function openLayerStream(layer: Layer, base: string, content: string): Promise<LayerStream> {
  const controller = new AbortController();
  const opened = await OPENERS[layer](base, content, controller.signal);
  const state = { deltas: 0, lastType: undefined as string | undefined };
  const ended = (async () => {
    try {
      for await (const message of opened.messages) {
        const { type, isDelta } = opened.classify(message.event ?? "message", message.data);
        state.lastType = type;
        if (isDelta) state.deltas++;
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  ended.catch(() => undefined);
  return {
    runId: opened.runId,
    get deltas() {
      return state.deltas;
    },
    get lastType() {
      return state.lastType;
    },
    ended,
    async stop() {
      const response = await fetch(`${base}${opened.stopPath}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      await response.arrayBuffer();
      return response.status;
    },
    abort: () => controller.abort(),
  };
}
