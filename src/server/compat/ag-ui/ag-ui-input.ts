import { z } from "@hono/zod-openapi";
import { TidemarkError } from "../../../core/index.js";

/** The longest AG-UI thread or run id accepted (they are the client's own strings, often UUIDs). */
export const MAX_ID_LENGTH = 200;

const ClientId = z.string().min(1).max(MAX_ID_LENGTH);

/** A text content part; other parts (images, files…) are refused: the agents read text. */
const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

const AgUiMessage = z.looseObject({
  id: z.string().max(MAX_ID_LENGTH),
  role: z.string(),
  content: z.union([z.string(), z.array(ContentPart)]).nullish(),
});

/**
 * `RunAgentInput` of `@ag-ui/core` 1.0 as the server reads it: loose (unknown keys are kept and
 * ignored), so that a newer client's additions do not turn into errors.
 */
const RunAgentInputSchema = z.looseObject({
  threadId: ClientId,
  runId: ClientId,
  messages: z.array(AgUiMessage),
  state: z.unknown().optional(),
  tools: z.array(z.unknown()).optional(),
  context: z.array(z.unknown()).optional(),
  forwardedProps: z.unknown().optional(),
  resume: z
    .array(z.looseObject({ interruptId: z.string().max(MAX_ID_LENGTH), status: z.enum(["resolved", "cancelled"]), payload: z.unknown().optional() }))
    .optional(),
});

/** An answer to an interrupt: here, the approval (or not) of a consequential tool. */
export interface AgUiResumeEntry {
  interruptId: string;
  status: "resolved" | "cancelled";
  payload?: unknown;
}

/** What a run needs from an AG-UI request. */
export interface AgUiRunRequest {
  /** The client's thread id (a Tidemark thread id is used as it is; see `resolveAgUiThread`). */
  threadId: string;
  /** The client's run id: the idempotency key of the native run, echoed in every run event. */
  runId: string;
  /** The text of the last user message: the run's input (unused when the request resumes a run). */
  content: string;
  /** Answers to the interrupts of the thread's paused run: the request continues that run. */
  resume: AgUiResumeEntry[];
  /** `forwardedProps.agent`, when the client names the agent. */
  agent: string | undefined;
  /** `forwardedProps.config`, the agent's config. */
  config: unknown;
  /** The client's state, echoed (with the plan's steps) in `STATE_SNAPSHOT`. */
  state: unknown;
}

/** Reads an AG-UI request body; throws `invalid_request` (400) naming the first problem. */
export function parseAgUiInput(body: unknown): AgUiRunRequest {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join(".") || "body";
    throw new TidemarkError("invalid_request", `The request is not a valid RunAgentInput: ${where}: ${issue?.message ?? "invalid"}`);
  }
  const input = parsed.data;
  const resume = input.resume ?? [];
  const lastUser = input.messages.findLast((message) => message.role === "user");
  const content = lastUser ? textOf(lastUser.content) : "";
  if (resume.length === 0 && !lastUser) throw new TidemarkError("invalid_request", "messages holds no user message: the last one is the run's input.");
  if (resume.length === 0 && content.trim() === "") throw new TidemarkError("invalid_request", "The last user message has no text.");
  const forwarded = isRecord(input.forwardedProps) ? input.forwardedProps : {};
  if (forwarded.agent !== undefined && (typeof forwarded.agent !== "string" || forwarded.agent === "")) {
    throw new TidemarkError("invalid_request", "forwardedProps.agent must be the name of an agent.");
  }
  return {
    threadId: input.threadId,
    runId: input.runId,
    content,
    resume,
    agent: forwarded.agent as string | undefined,
    config: forwarded.config,
    state: input.state,
  };
}

/** A message's text: a string, or its text parts joined; any other part is refused. */
function textOf(content: string | readonly z.infer<typeof ContentPart>[] | null | undefined): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content
    .map((part) => {
      if (part.type !== "text" || typeof part.text !== "string") {
        throw new TidemarkError("invalid_request", `A user message part of type "${part.type}" is not supported: send text.`);
      }
      return part.text;
    })
    .join("");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
