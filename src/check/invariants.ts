/** The invariants `tidemark check` verifies, by number; docs/invariants.md says how each is checked. */
export const INVARIANTS: readonly { number: number; statement: string }[] = [
  { number: 1, statement: "No published message without a checkpoint." },
  { number: 2, statement: "One idempotency key → at most one external action." },
  { number: 3, statement: "Every continuation references an existing checkpoint of its lineage." },
  { number: 4, statement: "A cancelled run publishes nothing after its cancel was accepted." },
  { number: 5, statement: "state_version strictly increases by one per transition; no two transitions share one." },
  { number: 6, statement: "No run leaves a terminal status." },
  { number: 7, statement: "No assistant tool call in model context without an outcome." },
  { number: 8, statement: "A deleted thread has no run that may still execute or publish." },
  { number: 9, statement: "A terminal run has no unfinished step." },
  { number: 10, statement: "A completed step has the checkpoint that made its work durable." },
  { number: 11, statement: "A step whose dependency did not complete never started." },
  { number: 12, statement: "A step's work is recorded in its own run, never after the run's cancel was accepted." },
];
