/**
 * The voice mode's speech detection runs Silero VAD in the page (@ricky0123/vad-web on
 * onnxruntime-web), which loads four files at run time: the model, the audio worklet, and
 * onnxruntime's wasm and its loader. Tidemark serves them itself, never from a CDN: this plugin
 * copies them into the build under `assets/voice-<content hash>/` (so the server caches them for
 * good, like every other asset) and tells the app where through `virtual:voice-assets`.
 * `vite` (development) serves the same paths from node_modules.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Plugin } from "vite";

const require = createRequire(import.meta.url);

/** The files, by the name the libraries ask for, and the package whose `dist/` holds them. */
const VOICE_FILES = [
  { name: "silero_vad_v5.onnx", from: "@ricky0123/vad-web" },
  { name: "vad.worklet.bundle.min.js", from: "@ricky0123/vad-web" },
  { name: "ort-wasm-simd-threaded.wasm", from: "onnxruntime-web" },
  { name: "ort-wasm-simd-threaded.mjs", from: "onnxruntime-web" },
] as const;

const VIRTUAL_ID = "virtual:voice-assets";
const RESOLVED_ID = `\0${VIRTUAL_ID}`;

/** The package's `dist/` directory: where its main entry lives (onnxruntime-web exports no package.json). */
function distDirectory(packageName: string): string {
  return dirname(require.resolve(packageName));
}

function loadFiles(): { name: string; content: Buffer }[] {
  return VOICE_FILES.map((file) => ({ name: file.name, content: readFileSync(join(distDirectory(file.from), file.name)) }));
}

/** The vite plugin: emits the files at build, serves them in development, and answers `virtual:voice-assets`. */
export function voiceAssets(): Plugin {
  let files: { name: string; content: Buffer }[] = [];
  let directory = "";
  const contentTypes: Record<string, string> = { ".onnx": "application/octet-stream", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm" };
  return {
    name: "tidemark-voice-assets",
    buildStart() {
      files = loadFiles();
      const hash = createHash("sha256");
      for (const file of files) hash.update(file.name).update(file.content);
      directory = `assets/voice-${hash.digest("hex").slice(0, 10)}`;
    },
    resolveId(id) {
      return id === VIRTUAL_ID ? RESOLVED_ID : undefined;
    },
    load(id) {
      if (id !== RESOLVED_ID) return undefined;
      return `/** Where the voice mode's model, worklet and wasm files are served. */\nexport const voiceAssetsBase = ${JSON.stringify(`/${directory}/`)};\n`;
    },
    generateBundle() {
      for (const file of files) this.emitFile({ type: "asset", fileName: `${directory}/${file.name}`, source: file.content });
    },
    configureServer(server) {
      server.middlewares.use(function serveVoiceAsset(request, response, next) {
        const path = request.url?.split("?")[0] ?? "";
        const file = files.find((candidate) => path === `/${directory}/${candidate.name}`);
        if (!file) return next();
        response.setHeader("content-type", contentTypes[file.name.slice(file.name.lastIndexOf("."))] ?? "application/octet-stream");
        response.end(file.content);
      });
    },
  };
}
