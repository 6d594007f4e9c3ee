import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/** `npm run chaos`: the chaos files kept out of `npm test` (a real database restart). */
export default defineConfig({
  test: {
    root: fileURLToPath(new URL("..", import.meta.url)),
    include: ["test/**/*.chaos.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
