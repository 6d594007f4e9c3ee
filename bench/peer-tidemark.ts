import { join } from "node:path";
import { selectModel } from "../src/models/index.js";
import { silentLogger } from "../src/runtime/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { readSseEvents } from "../src/stream/index.js";
import { createTempDir, requestJson } from "./bench-support.js";
import { trackStream, type Peer } from "./peer-stream.js";

/**
 * Tidemark's whole path in one process, as peer-compare measures it: an embedded server (SQLite,
 * the lean reader configured as `tidemark serve --model openai-compatible:m` configures it, the
 * event buffer, the SSE writer) and an SSE client of its API. A generation is a thread and a run
 * created over HTTP, read from `GET /v1/runs/{id}/events`; its Stop is `POST /v1/runs/{id}/cancel`.
 */
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
        const thread = await requestJson<{ thread_id: string }>("POST", `${url}/v1/threads`, {}, [201]);
        const run = await requestJson<{ run_id: string }>("POST", `${url}/v1/threads/${thread.thread_id}/runs`, { input: { role: "user", content: prompt } }, [201]);
        runIdKnown(run.run_id);
        lastRunId = run.run_id;
        const response = await fetch(`${url}/v1/runs/${run.run_id}/events`, { headers: { accept: "text/event-stream" }, signal });
        if (response.status !== 200 || !response.body) throw new Error(`events answered ${response.status}`);
        let lastType = "";
        for await (const message of readSseEvents(response.body, { signal })) {
          const event = JSON.parse(message.data) as { type: string; text?: string };
          lastType = event.type;
          if (event.type === "message.delta") onText(event.text ?? "");
        }
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
