/**
 * The body limit over a real HTTP server: decided from Content-Length when the request has one,
 * counted as read when it is chunked, and the body still readable by the route after it.
 */
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { limitBody } from "./limit-body.js";

const MAX = 1_000;
let server: ServerType | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function start(): Promise<number> {
  const app = new Hono();
  app.use("*", limitBody({ maxSize: MAX, onError: (c) => c.json({ error: "payload_too_large" }, 413) }));
  app.post("/echo", async (c) => c.json({ length: (await c.req.text()).length }));
  app.get("/plain", (c) => c.json({ ok: true }));
  const listening = new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => resolve(info.port));
  });
  return listening;
}

/** One request by `node:http`, its body sent as given: whole (with Content-Length) or in chunks. */
function send(port: number, method: string, path: string, pieces: string[], isChunked: boolean): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = isChunked ? { "transfer-encoding": "chunked" } : { "content-length": String(Buffer.byteLength(pieces.join(""))) };
    const request = http.request({ host: "127.0.0.1", port, method, path, headers }, (response) => {
      let body = "";
      response.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, body }));
    });
    request.on("error", reject);
    for (const piece of pieces) request.write(piece);
    request.end();
  });
}

describe("limitBody", () => {
  it("passes a body within the limit to the route, whole or chunked", async () => {
    const port = await start();
    expect(await send(port, "POST", "/echo", ["x".repeat(MAX)], false)).toEqual({ status: 200, body: JSON.stringify({ length: MAX }) });
    expect(await send(port, "POST", "/echo", ["x".repeat(600), "y".repeat(400)], true)).toEqual({ status: 200, body: JSON.stringify({ length: MAX }) });
  });

  it("refuses a body over the limit by its Content-Length, and a chunked one as it is counted", async () => {
    const port = await start();
    expect((await send(port, "POST", "/echo", ["x".repeat(MAX + 1)], false)).status).toBe(413);
    expect((await send(port, "POST", "/echo", ["x".repeat(600), "y".repeat(401)], true)).status).toBe(413);
  });

  it("answers a request without a body, and refuses a GET that sends too large a one", async () => {
    const port = await start();
    expect(await send(port, "GET", "/plain", [], false)).toEqual({ status: 200, body: JSON.stringify({ ok: true }) });
    expect((await send(port, "GET", "/plain", ["x".repeat(MAX + 1)], false)).status).toBe(413);
  });
});
