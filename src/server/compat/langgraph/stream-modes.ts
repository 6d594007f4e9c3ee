import { LangGraphError } from "./langgraph-error.js";
import { STREAM_MODES, type StreamMode } from "./langgraph-schemas.js";

/** The modes that produce parts here; a join that names none gets them all, as a background run does. */
export const SUPPORTED_STREAM_MODES: readonly StreamMode[] = ["values", "messages-tuple", "updates"];

/** A create request's `stream_mode` (absent: `values`, the Agent Server's default). */
export function streamModesOf(value: StreamMode | StreamMode[] | null | undefined): ReadonlySet<StreamMode> {
  if (value === undefined || value === null) return new Set(["values"]);
  return new Set(Array.isArray(value) ? value : [value]);
}

/** A join's `stream_mode` query: one mode, or a JSON list as the SDK sends it (absent: every supported mode). */
export function streamModesOfQuery(values: readonly string[]): ReadonlySet<StreamMode> {
  if (values.length === 0) return new Set(SUPPORTED_STREAM_MODES);
  const modes = values.flatMap((value) => {
    if (!value.startsWith("[")) return [value];
    try {
      const parsed: unknown = JSON.parse(value);
      return Array.isArray(parsed) ? parsed : [parsed];
    } catch {
      return [value];
    }
  });
  for (const mode of modes) {
    if (!(STREAM_MODES as readonly unknown[]).includes(mode)) throw new LangGraphError(422, "invalid_request", `stream_mode: ${JSON.stringify(mode).slice(0, 60)} is not a stream mode.`);
  }
  return new Set(modes as StreamMode[]);
}
