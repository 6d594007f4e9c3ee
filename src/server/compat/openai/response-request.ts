/**
 * The body of `POST /v1/responses`, read into what a Tidemark run needs. Tidemark's run input is
 * one user message, so `input` is a string or a list holding one user message (its content a
 * string or `input_text` parts). Parameters that tune a model (temperature, tools, …) are ignored:
 * the agent owns them. `instructions` is the run's own system instruction (the runtime puts it
 * before each of the run's model requests; it is never published); `metadata` is stored with the
 * run, within OpenAI's limits (16 pairs, keys up to 64 characters, values up to 512).
 */
import { z } from "zod";
import { TidemarkError } from "../../../core/index.js";

/** The longest `instructions` (as long as the largest user message). */
const MAX_INSTRUCTIONS_CHARS = 100_000;

const TextPart = z.object({ type: z.enum(["input_text", "output_text"]), text: z.string() });
const InputMessage = z.object({
  type: z.literal("message").optional(),
  role: z.literal("user"),
  content: z.union([z.string(), z.array(TextPart).min(1)]),
});

const CreateResponseBody = z.object({
  model: z.string().min(1).max(200),
  input: z.union([z.string(), z.array(InputMessage).length(1)]),
  instructions: z.string().max(MAX_INSTRUCTIONS_CHARS).nullish(),
  background: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  previous_response_id: z.string().max(200).nullish(),
  metadata: z.record(z.string().min(1).max(64), z.string().max(512)).nullish(),
});

/** A create request as a run needs it. */
export interface ResponseRequest {
  /** The agent. */
  model: string;
  /** The user's message. */
  content: string;
  isBackground: boolean;
  isStream: boolean;
  previousResponseId: string | undefined;
  /** The run's own system instruction; undefined for none (an empty string is none). */
  instructions: string | undefined;
  metadata: Record<string, string> | undefined;
}

/** The largest user message (as a native run's input). */
const MAX_CONTENT_CHARS = 100_000;

/** Reads a create body; an invalid one throws `invalid_request` naming the parameter (OpenAI's `param`). */
export function parseResponseRequest(body: unknown): ResponseRequest {
  const parsed = CreateResponseBody.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.length > 0 ? issue.path.map(String).join(".") : null;
    throw new TidemarkError("invalid_request", `Invalid ${param ?? "body"}: ${issue.message}`, { details: { param } });
  }
  const request = parsed.data;
  const metadata = request.metadata ?? undefined;
  if (metadata && Object.keys(metadata).length > 16) {
    throw new TidemarkError("invalid_request", "metadata holds at most 16 keys.", { details: { param: "metadata" } });
  }
  const content = contentOf(request.input);
  if (content.trim() === "" || content.length > MAX_CONTENT_CHARS) {
    throw new TidemarkError("invalid_request", `input must be a user message of 1 to ${MAX_CONTENT_CHARS} characters.`, { details: { param: "input" } });
  }
  return {
    model: request.model,
    content,
    isBackground: request.background ?? false,
    isStream: request.stream ?? false,
    previousResponseId: request.previous_response_id ?? undefined,
    instructions: request.instructions ? request.instructions : undefined,
    metadata,
  };
}

function contentOf(input: z.infer<typeof CreateResponseBody>["input"]): string {
  if (typeof input === "string") return input;
  const content = input[0]!.content;
  return typeof content === "string" ? content : content.map((part) => part.text).join("");
}
