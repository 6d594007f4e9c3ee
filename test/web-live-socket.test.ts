/**
 * The web app's live protocol client (web/src/voice/live-frames.ts, live-socket.ts): which frames
 * it accepts, the same-origin URL, the subprotocol auth, and a real WebSocket round trip (the `ws`
 * package's client standing in for the browser's).
 */
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { parseServerFrame } from "../web/src/voice/live-frames.js";
import { base64Url, liveSocketUrl, liveSubprotocols, openLiveSocket, type LiveSocketClose } from "../web/src/voice/live-socket.js";

describe("the live frames the web app accepts", () => {
  it.each([
    ['{"type":"output.delta","message_id":"msg_1","text":"Tide"}', { type: "output.delta", message_id: "msg_1", text: "Tide" }],
    ['{"type":"output.paused"}', { type: "output.paused" }],
    [
      '{"type":"turn.interrupted","run_id":"run_1","message_id":"msg_1","heard_chars":14,"reason":"user_speech"}',
      { type: "turn.interrupted", run_id: "run_1", message_id: "msg_1", heard_chars: 14, reason: "user_speech" },
    ],
    [
      '{"type":"message.published","message_id":"msg_1","content":"The tide","interrupted":true,"state_version":3,"extra":1}',
      { type: "message.published", message_id: "msg_1", content: "The tide", interrupted: true, state_version: 3, extra: 1 },
    ],
  ])("accepts %s", (text, expected) => {
    expect(parseServerFrame(text)).toEqual(expected);
  });

  it.each([
    "not json",
    "[1]",
    "null",
    '"output.paused"',
    '{"type":"output.unknown"}',
    '{"type":"toString"}',
    '{"type":"output.delta","message_id":"msg_1"}',
    '{"type":"turn.interrupted","run_id":"run_1","message_id":"msg_1","heard_chars":"14","reason":"user_speech"}',
    '{"type":"session.ready","thread_id":"thr_1","interruption":null,"playback_acks":true}',
  ])("ignores %s", (text) => {
    expect(parseServerFrame(text)).toBeNull();
  });
});

describe("the live socket's address and auth", () => {
  it("is the page's own origin, ws: or wss:", () => {
    expect(liveSocketUrl("http://127.0.0.1:8787", "thr_01abc")).toBe("ws://127.0.0.1:8787/v1/threads/thr_01abc/live");
    expect(liveSocketUrl("https://tidemark.example", "thr_01abc")).toBe("wss://tidemark.example/v1/threads/thr_01abc/live");
    expect(liveSocketUrl("http://localhost:5173", "thr/../x")).toBe("ws://localhost:5173/v1/threads/thr%2F..%2Fx/live");
  });

  it("asks for no subprotocol without a key, and for the key's pair with one (base64url, no padding)", () => {
    expect(liveSubprotocols(null)).toEqual([]);
    expect(liveSubprotocols("tm_secret")).toEqual(["tidemark.live", "tidemark.key.dG1fc2VjcmV0"]);
    expect(base64Url("k?>")).toBe("az8-");
    expect(base64Url("ké/")).toBe(Buffer.from("ké/").toString("base64url"));
    expect(base64Url("a")).toBe("YQ");
  });
});

describe("the live socket over a real WebSocket", () => {
  let server: WebSocketServer | undefined;
  afterEach(async () => {
    if (!server) return;
    for (const client of server.clients) client.terminate();
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  });

  it("sends frames in order (those before the open too), with the key's subprotocols, and hands over the frames it knows", async () => {
    server = new WebSocketServer({ port: 0, host: "127.0.0.1", handleProtocols: (protocols) => (protocols.has("tidemark.live") ? "tidemark.live" : false) });
    await once(server, "listening");
    const connected = once(server, "connection") as Promise<[WebSocket, { url: string; headers: Record<string, string> }]>;
    const { port } = server.address() as AddressInfo;
    const frames: unknown[] = [];
    let opened = false;
    const socket = openLiveSocket(
      { origin: `http://127.0.0.1:${port}`, threadId: "thr_1", apiKey: "tm_secret", WebSocketClass: WebSocket as unknown as typeof globalThis.WebSocket },
      { onOpen: () => (opened = true), onFrame: (frame) => frames.push(frame), onClose: () => {} },
    );
    socket.send({ type: "user.started_speaking" });
    socket.send({ type: "user.stopped_speaking", transcript: "Why do tides turn?" });
    const [peer, request] = await connected;
    expect(request.url).toBe("/v1/threads/thr_1/live");
    expect(request.headers["sec-websocket-protocol"]!.split(/,\s*/)).toEqual(["tidemark.live", "tidemark.key.dG1fc2VjcmV0"]);
    const received: string[] = [];
    const gotThree = new Promise<void>((resolve) =>
      peer.on("message", (data) => {
        received.push(String(data));
        if (received.length === 3) resolve();
      }),
    );
    peer.send("garbage");
    peer.send('{"type":"output.paused"}');
    await expect.poll(() => frames).toEqual([{ type: "output.paused" }]);
    expect(opened).toBe(true);
    socket.send({ type: "playback", message_id: "msg_1", played_chars: 8 });
    await gotThree;
    expect(received.map((text) => JSON.parse(text))).toEqual([
      { type: "user.started_speaking" },
      { type: "user.stopped_speaking", transcript: "Why do tides turn?" },
      { type: "playback", message_id: "msg_1", played_chars: 8 },
    ]);
    const closedByPeer = once(peer, "close");
    socket.close();
    const [code] = (await closedByPeer) as [number];
    expect(code).toBe(1000);
  });

  it("reports a close it did not ask for, once, and whether the socket had opened", async () => {
    server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await once(server, "listening");
    server.on("connection", (peer) => peer.close(4000, "bye"));
    const { port } = server.address() as AddressInfo;
    const closed = new Promise<LiveSocketClose>((resolve) =>
      openLiveSocket(
        { origin: `http://127.0.0.1:${port}`, threadId: "thr_1", apiKey: null, WebSocketClass: WebSocket as unknown as typeof globalThis.WebSocket },
        { onOpen: () => {}, onFrame: () => {}, onClose: resolve },
      ),
    );
    expect(await closed).toEqual({ code: 4000, reason: "bye", wasOpen: true });
  });
});
