/**
 * What every answer of every layer must be, whatever was sent (issue 17): below 500, and when it
 * is an error, JSON with a stable code in its layer's documented shape, at the status the code
 * stands for (docs/errors.md). Returns what is wrong, or undefined.
 */
import { ERROR_CODES } from "../../src/core/index.js";
import type { RawAnswer } from "./fuzz-http-client.js";

/** Which layer answers a path, and so which error shape it must use. */
export type Layer = "native" | "openai" | "langgraph";

/** The layer of `path` (the OpenAI routes share `/v1` with the native API), once resolved as a URL (`/v1/models/..` is `/v1/`). */
export function layerOf(rawPath: string): Layer {
  const path = new URL(rawPath, "http://localhost").pathname;
  if (/^\/v1\/(models|responses)(\/|\?|$)/.test(path)) return "openai";
  if (/^\/langgraph(\/|\?|$)/.test(path)) return "langgraph";
  return "native";
}

/** The LangGraph layer's own codes, for refusals the native API has none for (src/server/compat/langgraph). */
const LANGGRAPH_CODES = new Set(["thread_exists", "unsupported"]);
/** The codes LangGraph answers 422 for (the Agent Server's validation status) instead of 400. */
const LANGGRAPH_422 = new Set(["invalid_request", "invalid_json"]);

/** The refusals of Node's HTTP parser (`client-error-handler.ts`), answered before any routing. */
const PARSER_CODES = new Set(["headers_too_large", "malformed_request", "request_timeout"]);

const isCode = (code: unknown): code is keyof typeof ERROR_CODES => typeof code === "string" && Object.hasOwn(ERROR_CODES, code);

/** What is wrong with `answer` for a `method` request to `path`, or undefined. */
export function answerProblem(method: string, path: string, answer: RawAnswer): string | undefined {
  if (answer.kind === "no_answer") return `no answer: ${answer.reason}`;
  const { status } = answer;
  if (status >= 500) return `status ${status}`;
  if (status < 200 || (status >= 300 && status < 400)) return `unexpected status ${status}`;
  if (status < 400) return undefined;
  if (!answer.contentType.startsWith("application/json")) return `a ${status} answered as ${answer.contentType || "no content type"}`;
  // A HEAD answer has the GET's headers and no body.
  if (method === "HEAD") return answer.text === "" ? undefined : "a HEAD answered with a body";
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `a ${status} whose body is not JSON`;
  }
  const layer = layerOf(path);
  // What Node's parser refused never reached a route, so no layer could shape it: it is native on every path.
  if (typeof body?.error === "string" && PARSER_CODES.has(body.error)) return nativeProblem(status, body);
  if (layer === "openai") return openAiProblem(status, body);
  // Every LangGraph error, load refusals (429) included, is in the Agent Server's shape (docs/reliability.md).
  if (layer === "langgraph") return langGraphProblem(status, body);
  return nativeProblem(status, body);
}

function nativeProblem(status: number, body: any): string | undefined {
  if (typeof body?.error !== "string" || typeof body.message !== "string") return `not {error, message}: ${preview(body)}`;
  const code: unknown = body.error;
  if (!isCode(code)) return `unknown code ${String(code)}`;
  if (ERROR_CODES[code].status !== status) return `${code} answered with ${status}, not ${ERROR_CODES[code].status}`;
  return undefined;
}

function openAiProblem(status: number, body: any): string | undefined {
  const error = body?.error;
  if (typeof error !== "object" || error === null) return `not OpenAI's {error: {…}}: ${preview(body)}`;
  if (typeof error.message !== "string" || typeof error.type !== "string" || !("param" in error)) return `an OpenAI error without message, type, param: ${preview(body)}`;
  const code = error.code === "invalid_api_key" ? "unauthorized" : error.code;
  if (!isCode(code)) return `unknown code ${String(error.code)}`;
  if (ERROR_CODES[code].status !== status) return `${code} answered with ${status}, not ${ERROR_CODES[code].status}`;
  return undefined;
}

function langGraphProblem(status: number, body: any): string | undefined {
  if (typeof body?.detail !== "string" || typeof body.error !== "string") return `not LangGraph's {detail, error}: ${preview(body)}`;
  const code: string = body.error;
  if (LANGGRAPH_CODES.has(code)) return status >= 400 && status < 500 ? undefined : `${code} answered with ${status}`;
  if (!isCode(code)) return `unknown code ${code}`;
  if (ERROR_CODES[code].status !== status && !(LANGGRAPH_422.has(code) && status === 422)) {
    return `${code} answered with ${status}, not ${ERROR_CODES[code].status}`;
  }
  return undefined;
}

const preview = (body: unknown): string => JSON.stringify(body)?.slice(0, 300) ?? String(body);
