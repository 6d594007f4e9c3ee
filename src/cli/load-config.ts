/**
 * The config file `tidemark serve` deploys (DESIGN §11): the one named by `--config` (or
 * `TIDEMARK_CONFIG`), else the first of `tidemark.config.ts`, `.mjs`, `.js` in the working
 * directory, else none (the built-in agents only). A `.js`/`.mjs` file is a native `import()`; a
 * `.ts` file is loaded with tsx's ESM API. A file that cannot be used is a `ConfigurationError`
 * whose one-line message names the file and the problem.
 */
import type { RetentionSettings } from "../core/index.js";
import { statSync } from "node:fs";
import { extname, isAbsolute, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { AgentDefinitionError } from "../agents/agent-definition-error.js";
import type { Agent } from "../agents/define-agent.js";
import { checkConfig } from "../config/index.js";
import { ConfigurationError, type Redactor } from "../core/index.js";
import type { Tool } from "../tools/tool.js";

/** The files looked for in the working directory, in this order. */
export const CONFIG_FILE_NAMES = ["tidemark.config.ts", "tidemark.config.mjs", "tidemark.config.js"] as const;

const NATIVE = new Set([".js", ".mjs", ".cjs"]);
const TYPESCRIPT = new Set([".ts", ".mts", ".cts"]);

/** A config file, loaded and checked. */
export interface LoadedConfig {
  /** The file as the user would name it (relative to the working directory when it is inside it). */
  file: string;
  agents: Agent[];
  tools: Tool[];
  /** The config's redactor, used instead of the `TIDEMARK_REDACT` settings' one. */
  redactor?: Redactor;
  /** The retention the file sets (docs/data/lifetimes.md); the environment's settings win over it. */
  retention: Partial<RetentionSettings>;
}

/** Where the file was named: `--config` or `TIDEMARK_CONFIG`; none when it was found in `cwd`. */
export interface ConfigRequest {
  file?: string;
  setting?: "--config" | "TIDEMARK_CONFIG";
  cwd: string;
}

/** Loads the config file `request` names (or the one in `cwd`); undefined when there is none. */
export async function loadConfig(request: ConfigRequest): Promise<LoadedConfig | undefined> {
  const path = request.file ? namedFile(request.file, request.setting ?? "--config", request.cwd) : foundFile(request.cwd);
  if (path === undefined) return undefined;
  const file = shown(path, request.cwd);
  const refuse = (message: string, cause?: unknown) => new ConfigurationError(`${file}: ${sentence(oneLine(message))}`, { setting: "--config", cause });
  const load = TYPESCRIPT.has(extname(path)) ? await typeScriptImport(file) : nativeImport;
  let namespace: unknown;
  try {
    namespace = await load(pathToFileURL(path).href);
  } catch (error) {
    throw refuse(loadFailure(error, file), error);
  }
  const exported = defaultExport(namespace);
  if (exported === undefined) throw refuse("it has no default export: write export default { agents: [...] }");
  try {
    const config = checkConfig(exported);
    return {
      file,
      agents: [...config.agents],
      tools: [...(config.tools ?? [])],
      retention: { ...config.retention },
      ...(config.redactor ? { redactor: config.redactor } : {}),
    };
  } catch (error) {
    if (ConfigurationError.isInstance(error) || AgentDefinitionError.isInstance(error)) throw refuse(error.message, error);
    throw error;
  }
}

function namedFile(file: string, setting: string, cwd: string): string {
  const path = resolve(cwd, file);
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) throw new ConfigurationError(`${setting}: ${file} does not exist.`, { setting });
  if (!stat.isFile()) throw new ConfigurationError(`${setting}: ${file} is not a file.`, { setting });
  if (!NATIVE.has(extname(path)) && !TYPESCRIPT.has(extname(path))) {
    throw new ConfigurationError(`${setting}: ${file} is not a .js, .mjs, .cjs or .ts file.`, { setting });
  }
  return path;
}

function foundFile(cwd: string): string | undefined {
  return CONFIG_FILE_NAMES.map((name) => resolve(cwd, name)).find((path) => statSync(path, { throwIfNoEntry: false })?.isFile());
}

const nativeImport = (url: string): Promise<unknown> => import(url);

/** How a `.ts` config is imported: tsx's ESM API, loaded only for one (tsx may not be installed). */
async function typeScriptImport(file: string): Promise<(url: string) => Promise<unknown>> {
  try {
    const { tsImport } = await import("tsx/esm/api");
    return (url) => tsImport(url, import.meta.url) as Promise<unknown>;
  } catch (error) {
    throw new ConfigurationError(`${file}: a TypeScript config needs the tsx package, which is not installed; write the config as a .js file (or install tsx).`, {
      setting: "--config",
      cause: error,
    });
  }
}

/**
 * The module's default export. A file compiled to CommonJS (a `.ts` file outside a `"type":
 * "module"` package, through tsx) is imported as `{ default: module.exports }`, whose own
 * `default` is the file's.
 */
function defaultExport(namespace: unknown): unknown {
  const exported = (namespace as { default?: unknown }).default;
  if (typeof exported === "object" && exported !== null && (exported as { __esModule?: unknown }).__esModule === true) {
    return (exported as { default?: unknown }).default;
  }
  return exported;
}

/** Why the file could not be imported, in one line (a syntax error, or what its own code threw). */
function loadFailure(error: unknown, file: string): string {
  if (AgentDefinitionError.isInstance(error) || ConfigurationError.isInstance(error)) return error.message;
  if (!(error instanceof Error)) return String(error);
  // tsx's own heading says nothing an esbuild error's location and text after it do not.
  const message = oneLine(error.message).replace(/^Transform failed with \d+ errors?: /, "");
  const named = error.name && error.name !== "Error" ? `${error.name}: ${message}` : message;
  // Node names no line for a syntax error of an imported module; its own check does.
  const isParseError = error.name === "SyntaxError" && !/requested module/.test(message) && NATIVE.has(extname(file));
  return isParseError ? `${named} (node --check ${file} shows where)` : named;
}

function oneLine(text: string): string {
  // A CommonJS "Cannot find module" lists its require stack: the file itself, with tsx's query.
  return text
    .split("\nRequire stack:")[0]!
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .join(" ");
}

function sentence(text: string): string {
  return /[.!?)]$/.test(text) ? text : `${text}.`;
}

function shown(path: string, cwd: string): string {
  const inside = relative(cwd, path);
  return inside && !inside.startsWith("..") && !isAbsolute(inside) ? inside : path;
}
