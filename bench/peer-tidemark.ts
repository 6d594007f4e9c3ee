import { join } from "node:path";
import { selectModel } from "../src/models/index.js";
import { silentLogger } from "../src/runtime/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { createTempDir, requestJson } from "./bench-support.js";
import { trackStream, type Peer } from "./peer-stream.js";
import { readRunEvents } from "./run-events-reader.js";

/**
 * Tidemark's whole path in one process, as peer-compare measures it: an embedded server (SQLite,
 * the lean reader configured as `tidemark serve --model openai-compatible:m` configures it, the
 * event buffer, the SSE writer) and an SSE client of its API. A generation is a new conversation:
 * one `POST /v1/runs` with `Accept: text/event-stream` creates the thread and the run, and its
 * reply is the run's events; its Stop is `POST /v1/runs/{id}/cancel`, with the run id the reply's
 * `Location` gave before any event.
 */
/** The events address a created run's reply names in `Location`. */
const RUN_LOCATION = /^\/v1\/runs\/([^/]+)\/events$/;

export async function startTidemarkPeer(baseURL: string): Promise<Peer> {
  const temp = createTempDir("peer-compare");
  const model = selectModel("openai-compatible:m", { TIDEMARK_OPENAI_BASE_URL: baseURL });
  const tidemark = await startTidemark({ dbPath: join(temp.dir, "peer.db"), port: 0, model, logger: silentLogger });
  const url = tidemark.url;
  let lastRunId: string | undefined;
  const cancel = (runId: string) => requestJson<{ status: string }>("POST", `${url}/v1/runs/${runId}/cancel`, { reason: "bench" }, [200, 202]);

  return {
    name: "tidemark",
    start(prompt) {
      let runIdKnown!: (runId: string) => void;
      const runId = new Promise<string>((resolve) => (runIdKnown = resolve));
      const consume = async (signal: AbortSignal, onText: (text: string) => void) => {
        // One exchange from the prompt to its stream: the thread, the run and its events (POST /v1/runs).
        const response = await fetch(`${url}/v1/runs`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "text/event-stream" },
          body: JSON.stringify({ input: { role: "user", content: prompt } }),
          signal,
        });
        if (response.status !== 201 || !response.body) throw new Error(`create answered ${response.status}`);
        const createdRunId = RUN_LOCATION.exec(response.headers.get("location") ?? "")?.[1];
        if (!createdRunId) throw new Error(`no run id in Location: ${response.headers.get("location")}`);
        runIdKnown(createdRunId);
        lastRunId = createdRunId;
        const lastType = await readRunEvents(response.body, signal, onText);
        if (lastType !== "run.completed" && lastType !== "run.cancelled") throw new Error(`the run's stream ended with ${lastType || "nothing"}`);
      };
      // The Stop is the server's: the stream then ends by itself with run.cancelled.
      return trackStream(consume, async () => void (await cancel(await runId)));
    },
    async bareRoundTripMs() {
      if (!lastRunId) throw new Error("no run yet");
      const startedAt = performance.now();
      await cancel(lastRunId);
      return performance.now() - startedAt;
    },
    async close() {
      await tidemark.close();
      temp.remove();
    },
  };
}
