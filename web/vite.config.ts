/**
 * The web app's build: `npm run build:web` (vite build --config web/vite.config.ts) writes
 * dist/web, which `tidemark serve` serves at `/`. `vite --config web/vite.config.ts` serves it
 * for development and sends `/v1` to a Tidemark on :8787 (TIDEMARK_URL to change it).
 */
import react from "@vitejs/plugin-react";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
import { voiceAssets } from "./vite-voice-assets.js";

const webDirectory = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: webDirectory,
  // Absolute asset addresses: a page address like /threads/thr_… is served index.html too.
  base: "/",
  plugins: [react(), voiceAssets()],
  build: {
    outDir: fileURLToPath(new URL("../dist/web", import.meta.url)),
    emptyOutDir: true,
    // No inline scripts or data: modules, so the server's Content-Security-Policy can forbid them.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: true,
  },
  server: {
    proxy: { "/v1": { target: process.env.TIDEMARK_URL ?? "http://127.0.0.1:8787", changeOrigin: false } },
  },
});
