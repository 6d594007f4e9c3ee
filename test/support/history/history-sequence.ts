/**
 * One history-test sequence: a few clients, each a short program of operations, run against one
 * real server with fast-check's scheduler deciding which client's next operation goes first (the
 * interleaving); then every held answer is let go, every run is read to its end, and the state is
 * read back. The programs and the schedule are fast-check values, so a failing sequence shrinks.
 */
import fc from "fast-check";
import { HistoryRecorder, type RecordingClient } from "./history-recorder.js";
import type { History, Reply } from "./history-types.js";
import { readRunStream } from "./read-run-stream.js";

/** How a new run meets a busy thread. */
export type Multitask = "reject" | "enqueue" | "interrupt" | "rollback";

/** One client operation; `run` and `thread` pick among those known when it runs (modulo). */
export type Step =
  | { kind: "create"; thread: number; isGated: boolean; isEmail: boolean; isVersioned: boolean; multitask: Multitask }
  | { kind: "stream"; run: number; maxEvents: number }
  | { kind: "cancel"; run: number }
  | { kind: "release"; run: number }
  /** Read the run until its approval prompt (`run.interrupted`), the end or a silence, then approve or reject. */
  | { kind: "decide"; run: number; decision: "approve" | "reject" }
  | { kind: "continue"; run: number }
  | { kind: "fork"; run: number }
  /** Stop (waiting until the run is terminal), then save the text this client saw of it. */
  | { kind: "fragment"; run: number };

/** A sequence: its first run's shape, and each client's program. */
export interface SequencePlan {
  first: Extract<Step, { kind: "create" }>;
  programs: Step[][];
}

const index = fc.nat({ max: 7 });
const createStep = fc.record({
  kind: fc.constant("create" as const),
  thread: index,
  isGated: fc.boolean(),
  isEmail: fc.boolean(),
  isVersioned: fc.boolean(),
  multitask: fc.constantFrom<Multitask>("reject", "enqueue", "interrupt", "rollback"),
});

/** Any one operation, weighted towards reading and stopping, where the races are. */
export const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: createStep, weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("stream" as const), run: index, maxEvents: fc.integer({ min: 1, max: 12 }) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("cancel" as const), run: index }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant("release" as const), run: index }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("decide" as const), run: index, decision: fc.constantFrom<"approve" | "reject">("approve", "reject") }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("continue" as const), run: index }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("fork" as const), run: index }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("fragment" as const), run: index }), weight: 1 },
);

/** Two or three clients of one to five operations each. */
export const sequenceArbitrary: fc.Arbitrary<SequencePlan> = fc.record({
  first: createStep,
  programs: fc.array(fc.array(stepArbitrary, { minLength: 1, maxLength: 5 }), { minLength: 2, maxLength: 3 }),
});

/** What a sequence needs of the server under test. */
export interface SequenceServer {
  url: string;
  /** Lets the held answers to `key` go on (see gated-model.ts). */
  open(key: string): void;
  gated(text: string, key: string): string;
}

/** A run a client created, with the gate its answer waits on. */
interface KnownRun {
  runId: string;
  threadId: string;
  gate: string;
  baseCheckpointId: string | undefined;
}

/** How long a read waits in silence before its client leaves (a held run sends nothing). */
const IDLE_MS = 25;
/** How long the final reads wait for a run to end before the sequence is declared stuck. */
const DRAIN_MS = 20_000;

let sequenceCount = 0;

/** Runs `plan` under `scheduler` and returns the recorded history. */
export async function runSequence(server: SequenceServer, scheduler: fc.Scheduler, plan: SequencePlan): Promise<History> {
  const sequence = sequenceCount++;
  const recorder = new HistoryRecorder(server.url);
  const threads: string[] = [];
  const runs: KnownRun[] = [];
  let gates = 0;

  const setup = recorder.client("setup");
  const firstThread = await setup.createThread();
  if (firstThread === undefined) throw new Error("the first thread could not be created");
  threads.push(firstThread);

  async function create(client: RecordingClient, step: Extract<Step, { kind: "create" }>): Promise<void> {
    const threadId = threads[step.thread % threads.length]!;
    const gate = `s${sequence}-${gates++}`;
    const text = step.isEmail ? `Please email ada@example.com about quote ${gate}` : `Tell me about tides ${gate}`;
    const body: Record<string, unknown> = { input: { role: "user", content: step.isGated ? server.gated(text, gate) : text }, multitask: step.multitask };
    if (step.isVersioned) body.expected_state_version = await client.knownVersion(threadId);
    remember(await client.createRun(threadId, body), threadId, gate);
  }

  function remember(reply: Reply | undefined, threadId: string, gate: string): void {
    if (reply?.status !== 201) return;
    runs.push({ runId: reply.body.run_id, threadId, gate, baseCheckpointId: reply.body.base_checkpoint_id ?? undefined });
  }

  async function perform(client: RecordingClient, step: Step): Promise<void> {
    if (step.kind === "create") return create(client, step);
    const run = runs.length === 0 ? undefined : runs[step.run % runs.length]!;
    if (run === undefined) return recorder.skip(client.name, step.kind === "decide" ? "decide" : step.kind === "release" ? "release" : "get_run", "no run yet");
    switch (step.kind) {
      case "stream":
        await client.stream(run.runId, { maxEvents: step.maxEvents, idleMs: IDLE_MS });
        return;
      case "cancel":
        await client.cancel(run.runId);
        return;
      case "release":
        return client.release(run.runId, () => server.open(run.gate));
      case "decide":
        // A person decides once the approval prompt is on the screen: read up to it (or the end), then answer.
        await client.stream(run.runId, { untilTypes: ["run.interrupted"], idleMs: IDLE_MS * 4 });
        await client.decide(run.runId, step.decision);
        return;
      case "continue": {
        const reply = await client.continueRun(run.runId);
        // A Continue re-runs the stopped request: it waits on the same gate.
        remember(reply, run.threadId, run.gate);
        return;
      }
      case "fork": {
        if (run.baseCheckpointId === undefined) return recorder.skip(client.name, "fork", "the run has no base checkpoint");
        const branch = await client.fork(run.threadId, run.baseCheckpointId);
        if (branch !== undefined) threads.push(branch);
        return;
      }
      case "fragment":
        // "Stop and keep what I saw": a fragment is saved of a stopped run.
        if (client.lastDelta.has(run.runId)) await client.cancel(run.runId, 5_000);
        await client.saveFragment(run.runId);
        return;
    }
  }

  await create(setup, plan.first);
  const clients = plan.programs.map((_, number) => recorder.client(`client${number + 1}`));
  const programs = plan.programs.map(async (program, number) => {
    const client = clients[number]!;
    for (const [position, step] of program.entries()) {
      // The scheduler decides which client's next operation is sent first.
      await scheduler.schedule(Promise.resolve(), `${client.name}#${position} ${step.kind}`);
      await perform(client, step);
    }
  });
  await scheduler.waitFor(Promise.all(programs));

  // Drain: every held answer goes on; an operation left awaiting approval is stopped; each run is
  // read whole by a fresh client, all at once (an enqueued run ends only after the one before it).
  for (let at = 0; at < gates; at++) server.open(`s${sequence}-${at}`);
  const drain = recorder.client("drain");
  const streams = new Map(
    await Promise.all(
      runs.map(async (run) => [run.runId, await readToEnd(server.url, run.runId, drain)] as const),
    ),
  );
  const final = recorder.client("final");
  const finalRuns = new Map<string, Reply>();
  for (const run of runs) finalRuns.set(run.runId, (await final.getRun(run.runId)) ?? { status: 0, body: null });
  const histories = new Map<string, any>();
  const checkpoints = new Map<string, any>();
  for (const threadId of threads) {
    histories.set(threadId, (await recorder.call(`/v1/threads/${threadId}/history`)).body);
    checkpoints.set(threadId, (await recorder.call(`/v1/threads/${threadId}/checkpoints`)).body);
  }
  return { operations: recorder.operations, final: { runs: finalRuns, streams, histories, checkpoints } };
}

/** Reads a run whole from seq 0; a run that waits for approval is stopped by `drain` (recorded). */
async function readToEnd(url: string, runId: string, drain: RecordingClient) {
  const deadline = Date.now() + DRAIN_MS;
  let read = await readRunStream(url, runId, 0, { idleMs: IDLE_MS * 2 });
  while (read.outcome === "idle" && Date.now() < deadline) {
    const run = await drain.getRun(runId);
    if (run?.body?.status === "interrupted") await drain.cancel(runId);
    read = await readRunStream(url, runId, 0, { idleMs: IDLE_MS * 2 });
  }
  return read;
}
