import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_WEB_ROOT } from "../src/server/index.js";
import { startHarness, type Harness } from "./support/harness.js";
import { freePort, startServerProcess, type ServerProcess } from "./support/server-process.js";

const INDEX_HTML = '<!doctype html><html><head><script type="module" src="/assets/app-1a2b.js"></script></head><body>app</body></html>\n';
const APP_JS = 'console.log("tidemark");\n';

async function get(base: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${base}${path}`, init);
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe("the web app served beside the API", () => {
  let h: Harness;
  let fixture: string;
  beforeAll(async () => {
    fixture = mkdtempSync(join(tmpdir(), "tidemark-web-"));
    mkdirSync(join(fixture, "assets"));
    writeFileSync(join(fixture, "index.html"), INDEX_HTML);
    writeFileSync(join(fixture, "assets", "app-1a2b.js"), APP_JS);
    writeFileSync(join(fixture, "assets", "style-3c4d.css"), "body{margin:0}\n");
    writeFileSync(join(fixture, "favicon.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>");
    h = await startHarness({ webRoot: fixture });
  });
  afterAll(async () => {
    await h.close();
    rmSync(fixture, { recursive: true, force: true });
  });

  it("answers / with index.html, no-cache and a Content-Security-Policy that allows only its own origin", async () => {
    const page = await get(h.url, "/");
    expect(page.status).toBe(200);
    expect(page.text).toBe(INDEX_HTML);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(page.headers.get("content-security-policy")).toContain("connect-src 'self'");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect((await get(h.url, "/index.html")).text).toBe(INDEX_HTML);
  });

  it("serves hashed assets as immutable with their type, and other files without a long cache", async () => {
    const script = await get(h.url, "/assets/app-1a2b.js");
    expect(script).toMatchObject({ status: 200, text: APP_JS });
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const style = await get(h.url, "/assets/style-3c4d.css");
    expect(style.status).toBe(200);
    expect(style.headers.get("content-type")).toMatch(/^text\/css/);
    const icon = await get(h.url, "/favicon.svg");
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
    expect(icon.headers.get("cache-control")).toBe("no-cache");
    const head = await fetch(`${h.url}/assets/app-1a2b.js`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("answers an app page address with index.html (SPA fallback), but a missing file with a plain 404", async () => {
    for (const path of ["/threads/thr_01abc", "/some/deep/page", "/threads/thr_01abc?x=1"]) {
      const page = await get(h.url, path);
      expect(page.status, path).toBe(200);
      expect(page.text, path).toBe(INDEX_HTML);
    }
    const missing = await get(h.url, "/assets/gone-9999.js");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).not.toContain("html");
  });

  it("keeps the API first: unknown /v1 paths stay JSON 404s, /healthz and /metrics are theirs", async () => {
    for (const path of ["/v1/nope", "/v1", "/v1/threads/thr_01abc/nothing-here"]) {
      const response = await get(h.url, path);
      expect(response.status, path).toBe(404);
      expect(response.headers.get("content-type"), path).toMatch(/^application\/json/);
      expect(JSON.parse(response.text).error, path).toMatch(/not_found/);
    }
    const health = await get(h.url, "/healthz");
    expect(JSON.parse(health.text)).toMatchObject({ status: "ok" });
    expect((await get(h.url, "/metrics")).text).toContain("tidemark_active_runs");
    const created = await fetch(`${h.url}/v1/threads`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(created.status).toBe(201);
    // Only GET and HEAD reach the app.
    const post = await get(h.url, "/threads/thr_01abc", { method: "POST" });
    expect(post.status).toBe(404);
    expect(JSON.parse(post.text)).toMatchObject({ error: "not_found" });
  });

  it("never serves a file outside its directory", async () => {
    writeFileSync(join(fixture, "..", "tidemark-web-secret.txt"), "secret");
    try {
      for (const path of ["/../tidemark-web-secret.txt", "/%2e%2e/tidemark-web-secret.txt", "/assets/..%2f..%2ftidemark-web-secret.txt", "/%2e%2e%5ctidemark-web-secret.txt"]) {
        const response = await get(h.url, path);
        expect(response.text, path).not.toContain("secret");
      }
    } finally {
      rmSync(join(fixture, "..", "tidemark-web-secret.txt"), { force: true });
    }
  });
});

describe("a server whose web app is not built", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ webRoot: join(tmpdir(), "tidemark-no-such-web-app") });
  });
  afterAll(() => h.close());

  it("answers / with a short note instead of failing, and the API still works", async () => {
    const page = await get(h.url, "/");
    expect(page.status).toBe(404);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.text).toContain("npm run build:web");
    expect((await get(h.url, "/threads/thr_01abc")).text).toContain("npm run build:web");
    expect((await get(h.url, "/healthz")).status).toBe(200);
    expect((await get(h.url, "/v1/nope")).status).toBe(404);
  });
});

describe("tidemark serve and the built app (dist/web)", () => {
  let dir: string;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    if (!existsSync(join(DEFAULT_WEB_ROOT, "index.html"))) {
      throw new Error(`${DEFAULT_WEB_ROOT} has no index.html: run \`npm run build:web\` first (npm test does).`);
    }
    dir = mkdtempSync(join(tmpdir(), "tidemark-web-cli-"));
    server = await startServerProcess({ dbPath: join(dir, "tidemark.db"), port: await freePort() });
  });
  afterAll(async () => {
    server?.child.kill("SIGTERM");
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the built index.html at / and every asset it references", async () => {
    const page = await get(server!.url, "/");
    expect(page.status).toBe(200);
    expect(page.text).toBe(readFileSync(join(DEFAULT_WEB_ROOT, "index.html"), "utf8"));
    const references = [...page.text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]!);
    expect(references.some((reference) => reference.endsWith(".js"))).toBe(true);
    expect(references.some((reference) => reference.endsWith(".css"))).toBe(true);
    for (const reference of references) {
      const asset = await get(server!.url, reference);
      expect(asset.status, reference).toBe(200);
      expect(asset.headers.get("content-type"), reference).toMatch(reference.endsWith(".js") ? /^text\/javascript/ : /^text\/css/);
    }
    expect((await get(server!.url, "/threads/thr_01abc")).text).toBe(page.text);
  });
});
