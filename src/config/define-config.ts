/**
 * A Tidemark config file: what `tidemark serve` deploys besides its built-ins. Its default export
 * is a {@link TidemarkConfig}; `serve` reads `tidemark.config.ts`, `.mjs` or `.js` from the working
 * directory, or the file named by `--config` (or `TIDEMARK_CONFIG`).
 *
 * @example
 * // tidemark.config.js
 * import { defineAgent, defineConfig } from "tidemark";
 * const hello = defineAgent({
 *   name: "hello",
 *   steps: () => [{ id: "greet", run: (step) => step.publish("Hello!", { final: true }) }],
 * });
 * export default defineConfig({ agents: [hello] });
 */
import type { Agent } from "../agents/define-agent.js";
import type { Tool } from "../tools/tool.js";
import type { Redactor } from "../core/redactor.js";
import type { RetentionSettings } from "../core/index.js";

/** What a config file exports by default. */
export interface TidemarkConfig {
  /**
   * Agents runs may name (DESIGN §11), deployed beside the built-in `chat` (the default) and
   * `research`; one with a built-in's name replaces it. Every process of a deployment, API and
   * worker alike, must load the same agents.
   */
  agents: readonly Agent[];
  /** Tools the model may call, added to the server's default tools (one with a default tool's name replaces it). */
  tools?: readonly Tool[];
  /**
   * What traces, log lines, OpenTelemetry attributes and operation previews pass through
   * (docs/data/redaction.md), used instead of `TIDEMARK_REDACT` and `TIDEMARK_REDACT_PATTERNS`:
   * e.g. `(text) => defaultRedactor(text).replace(/\b\d{3}-\d{2}-\d{4}\b/g, "[ssn]")`.
   */
  redactor?: Redactor;
  /**
   * How long each layer is kept, in milliseconds (`Infinity`: for ever); docs/data/lifetimes.md.
   * A `TIDEMARK_*_TTL_MS` environment variable wins over the file.
   */
  retention?: Partial<RetentionSettings>;
}

/** Types a config file's default export (an identity function: it checks nothing at run time). */
export function defineConfig(config: TidemarkConfig): TidemarkConfig {
  return config;
}
