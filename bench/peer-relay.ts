import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createParser } from "eventsource-parser";
import { formatDeltaFrame } from "../src/stream/sse-frame.js";
import { createSseBodyWriter } from "../src/stream/sse-body-writer.js";
import { trackStream, type Peer } from "./peer-stream.js";
import { readRunEvents } from "./run-events-reader.js";

/**
 * A reference for the paced shapes, not a peer to beat: the least a server between the provider
 * and an SSE client costs when both run in one process, as Tidemark's do. A `node:http` server
 * relays each chunk's text at once, as Tidemark's delta frame written to the socket as Tidemark's
 * SSE writer writes it, and the client reads it as the Tidemark peer's does (fetch and
 * `readSseEvents`). Nothing else: no run, no store, no buffer, no replay, no title, no validation,
 * no backpressure (the bench's client keeps up).
 * Tidemark's distance to it is its own work; its distance to the floor, the relay's shape (a second
 * socket read and a loopback write a chunk, a larger frame).
 */
export async function startRelayPeer(baseURL: string): Promise<Peer> {
  const upstream = new URL(`${baseURL}/chat/completions`);
  const agent = new http.Agent({ keepAlive: true });
  let relayed = 0;
  const server = http.createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => (body += chunk));
    request.on("end", () => {
      const { prompt } = JSON.parse(body) as { prompt: string };
      const payload = JSON.stringify({ model: "m", messages: [{ role: "user", content: prompt }], stream: true, stream_options: { include_usage: true } });
      const runId = `run_relay_${++relayed}`;
      const upstreamRequest = http.request(upstream, {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) },
      });
      upstreamRequest.on("response", (answer) => {
        response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
        response.flushHeaders();
        const writer = createSseBodyWriter(response);
        let seq = 0;
        const parser = createParser({
          onEvent(event) {
            if (event.data === "[DONE]") return;
            const chunk = JSON.parse(event.data) as { choices?: { delta?: { content?: string | null } }[] };
            const text = chunk.choices?.[0]?.delta?.content;
            if (text) writer.write(formatDeltaFrame(runId, "msg_relay", text, ++seq));
          },
        });
        answer.setEncoding("utf8");
        answer.on("data", (text: string) => parser.feed(text));
        answer.on("end", () => response.end(`id: ${++seq}\nevent: run.completed\ndata: {"type":"run.completed","seq":${seq}}\n\n`));
      });
      upstreamRequest.on("error", () => response.destroy());
      response.on("close", () => upstreamRequest.destroy());
      upstreamRequest.end(payload);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/relay`;

  return {
    name: "relay",
    start(prompt) {
      return trackStream(async (signal, onText) => {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "text/event-stream" },
          body: JSON.stringify({ prompt }),
          signal,
        });
        if (response.status !== 200 || !response.body) throw new Error(`the relay answered ${response.status}`);
        const lastType = await readRunEvents(response.body, signal, onText);
        if (lastType !== "run.completed") throw new Error(`the relay's stream ended with ${lastType || "nothing"}`);
      });
    },
    async close() {
      server.closeAllConnections();
      server.close();
      agent.destroy();
    },
  };
}
