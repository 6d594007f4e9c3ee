// A custom agent: one step per item, each publishing a short assessment as a labelled block (at
// most `max_parallel` at once), then a final step that depends on all of them and publishes the
// answer. Each step completes with its own checkpoint: a Stop keeps the assessments already
// published, and a Continue reuses them instead of generating them again.
import { z } from "zod";
import { defineAgent } from "tidemark";

/** What a run of `compare` takes as `config` (served as JSON Schema by GET /v1/agents). */
export const compareConfigSchema = z
  .object({
    items: z.array(z.string().trim().min(1).max(80)).min(2).max(8),
    criteria: z.string().trim().min(1).max(500).default("how well it answers the request"),
    max_parallel: z.number().int().min(1).max(8).default(2),
  })
  .strict();

export const compareAgent = defineAgent({
  name: "compare",
  description: "Assesses each of config.items against config.criteria (a labelled block each), then recommends one.",
  configSchema: compareConfigSchema,
  concurrency: (config) => config.max_parallel,
  steps: ({ input, config }) => {
    const assessmentIds = config.items.map((_, index) => `assess-${index + 1}`);
    const assessments = config.items.map((item, index) => ({
      id: assessmentIds[index],
      title: `Assess ${item}`,
      // A Continue reuses this step's published block only while its input is the same.
      input: { request: input, item, criteria: config.criteria },
      run: async (step) => {
        const generation = await step.generate({
          messages: [
            { role: "system", content: `Assess one option in at most three sentences, against: ${config.criteria}.` },
            { role: "user", content: `Request: ${input}\n\nOption: ${item}` },
          ],
        });
        return step.publish(generation, { label: item });
      },
    }));
    const verdict = {
      id: "verdict",
      title: "Compare and recommend",
      dependsOn: assessmentIds,
      input: { request: input, items: config.items, criteria: config.criteria },
      run: async (step) => {
        // A dependency that published has a PublishedStep as its result: { messageId, content, label }.
        const found = assessmentIds.map((id, index) => `## ${config.items[index]}\n${step.result(id).content}`).join("\n\n");
        const generation = await step.generate({
          messages: [
            { role: "system", content: "Compare the options from the assessments below and recommend one. Do not invent facts they lack." },
            { role: "user", content: `Request: ${input}\n\n${found}` },
          ],
        });
        // The run's answer: the run completes in the same transaction as this publication.
        return step.publish(generation, { final: true });
      },
    };
    return [...assessments, verdict];
  },
});
