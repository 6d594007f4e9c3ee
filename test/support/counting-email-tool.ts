import { z } from "zod";
import { defineTool, DEMO_TOOL_NAMES, type Tool } from "../../src/tools/index.js";

/**
 * A real consequential tool under the demo model's email tool's name (the demo asks for it), that
 * counts its commits: a test proves an email went out once, or not at all, by `sends()`.
 */
export function countingEmailTool(): { tool: Tool; sends(): number } {
  let sends = 0;
  const tool = defineTool({
    name: DEMO_TOOL_NAMES.sendEmail,
    description: "Sends an email",
    effect: "consequential",
    approval: "never",
    input: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
    idempotencyKey: (input) => `email:${input.to}:${input.body}`,
    prepare: async (input) => ({ to: input.to, body: input.body }),
    commit: async (input) => {
      sends++;
      return { sent_to: input.to, body: input.body };
    },
  });
  return { tool, sends: () => sends };
}
