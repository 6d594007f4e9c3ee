/**
 * Serves the built web app (`npm run build:web` → `dist/web`) beside the API: its files, and
 * `index.html` for any other page path so that the app's own addresses survive a reload.
 *
 * The API keeps precedence: this is registered after every API route, and `/v1/…`, `/healthz`
 * and `/metrics` never fall back to the app (an unknown API path stays a JSON 404). A missing
 * build answers a short note instead of failing, so the API works without the app. The app's
 * files hold no data, so they need no API key; every `/v1` call it makes still does.
 */
import type { Context, Hono } from "hono";
import type { AppEnv } from "./app-env.js";
import { getMimeType } from "hono/utils/mime";
import { readFile, stat } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { resolve, sep } from "node:path";

/**
 * Where `npm run build:web` writes the app: `<package>/dist/web`. The same from `src/server`
 * (tests, tsx) and from `dist/server` (the built CLI).
 */
export const DEFAULT_WEB_ROOT = fileURLToPath(new URL("../../dist/web/", import.meta.url));

const API_PATH = /^\/(v1|healthz|metrics)(\/|$)/;

/**
 * The app loads only its own files and talks only to its own server. Voice mode compiles
 * onnxruntime's wasm (its speech detection), hence 'wasm-unsafe-eval' (wasm only, never JS
 * eval); its live WebSocket is same-origin, which connect-src 'self' covers (CSP 3 lets 'self'
 * match ws:/wss: on the page's own host and port).
 */
const HTML_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

const NOT_BUILT_NOTE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tidemark</title></head>
<body><main><h1>Tidemark</h1>
<p>The web app is not built. Run <code>npm run build:web</code> (or <code>npm start</code>), then reload.</p>
<p>The HTTP API is served at <code>/v1</code>; see <code>/v1/openapi.json</code>.</p>
</main></body></html>
`;

/** Adds the web app's GET routes to `app`; call it after every API route. */
export function registerWebApp(app: Hono<AppEnv>, root: string): void {
  const rootDirectory = resolve(root);
  app.get("*", async function serveWebApp(c) {
    const path = c.req.path;
    if (API_PATH.test(path)) return c.notFound();
    const file = await findFile(rootDirectory, path);
    if (file) return fileResponse(c, file);
    // A missing file (an asset, anything with an extension) is a plain 404, not the page:
    // a broken asset reference then fails loudly instead of loading HTML as script.
    if (/\.[a-z0-9]+$/i.test(path)) return c.text("Not found.", 404, { "x-content-type-options": "nosniff" });
    const index = await findFile(rootDirectory, "/index.html");
    if (!index) return c.html(NOT_BUILT_NOTE, 404, { "cache-control": "no-cache" });
    return fileResponse(c, index);
  });
}

/** The file `urlPath` names inside `root` (a directory's `index.html`), or undefined. */
async function findFile(root: string, urlPath: string): Promise<string | undefined> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (decoded.includes("\0") || decoded.includes("\\")) return undefined;
  let candidate = resolve(root, `.${decoded}`);
  // Never leave the root, whatever `..` or encoded separators the path holds.
  if (candidate !== root && !candidate.startsWith(root + sep)) return undefined;
  try {
    let info = await stat(candidate);
    if (info.isDirectory()) {
      candidate = resolve(candidate, "index.html");
      info = await stat(candidate);
    }
    return info.isFile() ? candidate : undefined;
  } catch {
    return undefined;
  }
}

async function fileResponse(c: Context, file: string): Promise<Response> {
  const body = await readFile(file);
  const type = getMimeType(file) ?? "application/octet-stream";
  const isHtml = type.startsWith("text/html");
  // Vite names every asset by its content hash: it can be cached for good.
  const isHashedAsset = c.req.path.startsWith("/assets/");
  const headers: Record<string, string> = isHtml
    ? { ...HTML_HEADERS }
    : {
        "x-content-type-options": "nosniff",
        "cache-control": isHashedAsset ? "public, max-age=31536000, immutable" : "no-cache",
      };
  headers["content-type"] = type;
  return c.body(body, 200, headers);
}
