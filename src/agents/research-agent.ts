import { z } from "zod";
import { defineAgent, type AgentDefinition, type AgentStep, type PublishedStep } from "./define-agent.js";

/** The `research` agent's config. */
export const researchConfigSchema = z
  .object({
    /** The subtasks to run; without them, a planning model call splits the request. */
    subtasks: z.array(z.string().trim().min(1).max(2_000)).min(1).max(100).optional(),
    /** Subtasks in flight at once. */
    max_parallel: z.number().int().min(1).max(32).default(4),
  })
  .strict();

export type ResearchConfig = z.infer<typeof researchConfigSchema>;

/** How many subtasks a planning call may produce. */
const MAX_SUBTASKS = 100;

/**
 * A plan agent (DESIGN §11): a planning step turns the request into subtasks (or takes
 * `config.subtasks`), one model step per subtask runs with at most `max_parallel` in flight, each
 * publishing its finished section as a labelled block with its own checkpoint, then a synthesis
 * step that depends on all of them publishes the answer. A Stop cuts every subtask in flight and
 * cancels the rest; a Continue reuses the plan and every finished section.
 */
export function createResearchAgent(): AgentDefinition<ResearchConfig> {
  return defineAgent<ResearchConfig>({
    name: "research",
    description: "Splits the request into subtasks, researches them in parallel (config.max_parallel), and writes one answer from the sections.",
    configSchema: researchConfigSchema,
    concurrency: (config) => config.max_parallel,
    steps: ({ input, config }) => [
      {
        id: "plan",
        title: "Plan the subtasks",
        input: { request: input, subtasks: config.subtasks ?? null },
        run: async (step) => {
          if (config.subtasks) return config.subtasks;
          const generation = await step.generate({
            messages: [
              { role: "system", content: "Split the user's request into independent research subtasks: one per line, no numbering, at most 8." },
              { role: "user", content: input },
            ],
          });
          return subtasksFrom(generation.text, input);
        },
        next: (result, { input: request }) => sectionSteps(request, result as string[]),
      },
    ],
  });
}

/** One step per subtask, then the synthesis that depends on all of them. */
function sectionSteps(request: string, subtasks: readonly string[]): AgentStep<ResearchConfig>[] {
  const ids = subtasks.map((_, i) => `subtask-${i + 1}`);
  const sections = subtasks.map(
    (subtask, i): AgentStep<ResearchConfig> => ({
      id: ids[i]!,
      title: subtask,
      input: { request, subtask },
      run: async (step) => {
        const generation = await step.generate({
          messages: [
            { role: "system", content: `You research one part of a larger request (part ${i + 1} of ${subtasks.length}). Answer only this part.` },
            { role: "user", content: `Request: ${request}\n\nThis part: ${subtask}` },
          ],
        });
        return step.publish(generation, { label: `${i + 1}. ${subtask}` });
      },
    }),
  );
  const synthesis: AgentStep<ResearchConfig> = {
    id: "synthesis",
    title: "Write the answer",
    dependsOn: ids,
    run: async (step) => {
      const found = ids.map((id, i) => `## ${subtasks[i]}\n${step.result<PublishedStep>(id).content}`).join("\n\n");
      const generation = await step.generate({
        messages: [
          { role: "system", content: "Write one answer to the request from the research sections below. Keep what they found; do not invent more." },
          { role: "user", content: `Request: ${request}\n\n${found}` },
        ],
      });
      return step.publish(generation, { final: true });
    },
  };
  return [...sections, synthesis];
}

/** The subtasks a planning answer names: its non-empty lines, without list marks; the request itself when it names none. */
export function subtasksFrom(text: string, request: string): string[] {
  const lines = text
    .split("\n")
    .map((line) => line.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, "").trim())
    .filter((line) => line.length > 0)
    .map((line) => line.slice(0, 2_000));
  return lines.length > 0 ? lines.slice(0, MAX_SUBTASKS) : [request.slice(0, 2_000) || "the request"];
}
