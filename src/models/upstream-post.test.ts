import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { readFileSync } from "node:fs";
import https from "node:https";
import type { Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelStreamPart } from "../core/model.js";
import { startTestProvider, type TestProvider } from "../testing/index.js";
import { createOpenAICompatibleModel } from "./openai-compatible-model.js";

/** The client sockets this process opens to `port` (every one is made by net.connect). */
function watchSockets(port: number): { opened: Socket[]; close(): void } {
  const opened: Socket[] = [];
  const onSocket = (message: unknown): void => {
    const { socket } = message as { socket: Socket };
    socket.once("connect", () => {
      if (socket.remotePort === port) opened.push(socket);
    });
  };
  subscribe("net.client.socket", onSocket);
  return { opened, close: () => void unsubscribe("net.client.socket", onSocket) };
}

async function readAll(stream: AsyncIterable<ModelStreamPart>): Promise<string> {
  let text = "";
  for await (const part of stream) if (part.type === "text-delta") text += part.text;
  return text;
}

describe("the lean reader's HTTP transport (node:http)", () => {
  let provider: TestProvider;
  let sockets: ReturnType<typeof watchSockets>;

  beforeEach(async () => {
    provider = await startTestProvider({ scenario: { chunks: 5, intervalMs: 0 } });
    sockets = watchSockets(Number(new URL(provider.url).port));
  });

  afterEach(async () => {
    sockets.close();
    await provider.close();
  });

  it("keeps the connection for the next request once an answer was read to its [DONE], as fetch did", async () => {
    const model = createOpenAICompatibleModel({ model: "m", baseURL: provider.url });
    const signal = new AbortController().signal;
    expect(await readAll(model.stream({ messages: [{ role: "user", content: "one" }] }, { signal }))).toBe("w0 w1 w2 w3 w4 ");
    expect(await readAll(model.stream({ messages: [{ role: "user", content: "two" }] }, { signal }))).toBe("w0 w1 w2 w3 w4 ");
    expect(await model.title!("three", { signal })).not.toBe("");
    expect(provider.requests).toHaveLength(3);
    expect(sockets.opened).toHaveLength(1);
  });

  it("an abort mid-answer destroys its socket before abort() returns, and the next request opens a new one", async () => {
    provider.setScenario({ chunks: 1_000, intervalMs: 5 });
    const model = createOpenAICompatibleModel({ model: "m", baseURL: provider.url });
    const controller = new AbortController();
    const parts: ModelStreamPart[] = [];
    const reading = (async () => {
      for await (const part of model.stream({ messages: [{ role: "user", content: "long" }] }, { signal: controller.signal })) parts.push(part);
    })();
    const failure = reading.then(
      () => undefined,
      (error: unknown) => error,
    );
    const request = await provider.waitForRequest(1);
    await provider.waitForChunks(request, 3);
    controller.abort(new Error("stopped"));
    expect(sockets.opened[0]!.destroyed).toBe(true);
    expect(((await failure) as Error).message).toBe("stopped");
    await request.closed;
    expect(provider.chunksAfter(request, request.socketClosedAt!)).toBe(0);

    provider.setScenario({ chunks: 2, intervalMs: 0 });
    expect(await readAll(model.stream({ messages: [{ role: "user", content: "again" }] }, { signal: new AbortController().signal }))).toBe("w0 w1 ");
    expect(sockets.opened).toHaveLength(2);
  });

  it("a reader that falls behind gets every part: the body held past the pause mark, the socket paused, then resumed", async () => {
    provider.setScenario({ chunks: 4_000, intervalMs: 0 });
    const model = createOpenAICompatibleModel({ model: "m", baseURL: provider.url });
    let count = 0;
    for await (const part of model.stream({ messages: [{ role: "user", content: "many" }] }, { signal: new AbortController().signal })) {
      if (part.type !== "text-delta") continue;
      // Stalled after the first part until the provider has written the whole answer (about 40 kB more than the pause mark).
      if (++count === 1) await provider.waitForChunks(provider.requests[0]!, 4_000);
    }
    expect(count).toBe(4_000);
  });
});

describe("the lean reader over HTTPS", () => {
  const certificate = readFileSync(new URL("../../test/support/tls/localhost-cert.pem", import.meta.url), "utf8");
  const key = readFileSync(new URL("../../test/support/tls/localhost-key.pem", import.meta.url), "utf8");
  let provider: TestProvider;
  let trusted: typeof https.globalAgent.options.ca;

  beforeEach(async () => {
    provider = await startTestProvider({ scenario: { chunks: 5, intervalMs: 0 }, tls: { key, cert: certificate } });
    // The reader uses Node's global agent: trusting the test certificate there is all it needs.
    trusted = https.globalAgent.options.ca;
    https.globalAgent.options.ca = certificate;
  });

  afterEach(async () => {
    https.globalAgent.options.ca = trusted;
    await provider.close();
  });

  it("streams an answer, and an abort mid-answer closes the connection (destroyed: a TLS socket cannot reset)", async () => {
    const model = createOpenAICompatibleModel({ model: "m", baseURL: provider.url });
    expect(provider.url.startsWith("https://")).toBe(true);
    expect(await readAll(model.stream({ messages: [{ role: "user", content: "one" }] }, { signal: new AbortController().signal }))).toBe("w0 w1 w2 w3 w4 ");

    provider.setScenario({ chunks: 1_000, intervalMs: 5 });
    const controller = new AbortController();
    const reading = readAll(model.stream({ messages: [{ role: "user", content: "long" }] }, { signal: controller.signal })).then(
      () => undefined,
      (error: unknown) => error,
    );
    const request = await provider.waitForRequest(2);
    await provider.waitForChunks(request, 3);
    controller.abort(new Error("stopped"));
    expect(((await reading) as Error).message).toBe("stopped");
    await request.closed;
    expect(provider.chunksAfter(request, request.socketClosedAt!)).toBe(0);
  });
});
