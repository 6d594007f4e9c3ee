/**
 * The history checker (issue 17): random interleavings of client operations (create with every
 * multitask mode, with and without expected_state_version; read, disconnect and reconnect with
 * Last-Event-ID; Stop; Continue; fork; save a fragment; approve or reject an email) against a real
 * server, each sequence recorded and checked against DESIGN §15 as a client sees it
 * (test/support/history/history-properties.ts) and by `tidemark check`, on SQLite and PostgreSQL.
 *
 * A fixed seed, shrinking on. `TIDEMARK_HISTORY_RUNS=10000 npm run check:history` is the long
 * run; `TIDEMARK_SEED` replays another seed.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { startHarness, type Harness, type HarnessStore } from "./support/harness.js";
import { createGatedModel } from "./support/history/gated-model.js";
import { checkHistory } from "./support/history/history-properties.js";
import { runSequence, sequenceArbitrary, type SequencePlan } from "./support/history/history-sequence.js";
import type { History } from "./support/history/history-types.js";

const STORES: HarnessStore[] = ["sqlite", "postgres"];
const SEED = Number(process.env.TIDEMARK_SEED ?? 20_171_702);
/** Sequences per store: bounded for `npm test`, the long run sets it. */
const RUNS = Number(process.env.TIDEMARK_HISTORY_RUNS ?? 60);
/**
 * The long run's census mode: a failing sequence is written to `$TMPDIR/tidemark-history-<store>-violations.jsonl`
 * and the run goes on (no shrinking), so one run counts every failure; the test still fails at the end.
 */
const KEEP_GOING = process.env.TIDEMARK_HISTORY_KEEP_GOING === "1";
/** A fresh server every so many sequences, so `tidemark check` of the whole store stays cheap. */
const SEQUENCES_PER_SERVER = 10;

describe.each(STORES)("history checker (%s)", (storeKind) => {
  let dir: string;
  let outbox: DemoOutbox;
  const gated = createGatedModel();
  let h: Harness | undefined;
  let served = 0;
  const counts = { sequences: 0, operations: 0, runs: 0, events: 0, failed: 0 };
  /** Each kind of operation by its outcome (`cancel 202`, `stream disconnected`, …): what the sequences exercised. */
  const outcomes = new Map<string, number>();
  /** Milliseconds spent starting servers, running sequences and in `tidemark check`. */
  const timing = { server: 0, sequence: 0, check: 0 };

  async function server(): Promise<Harness> {
    if (h !== undefined && served < SEQUENCES_PER_SERVER) return h;
    if (h !== undefined) await closeServer();
    h = await startHarness({ storeKind, model: gated.model, tools: createDemoTools({ outbox, searchDelayMs: 0 }) });
    served = 0;
    return h;
  }
  async function closeServer(): Promise<void> {
    const closing = h;
    h = undefined;
    if (closing === undefined) return;
    await closing.expectNoViolations();
    await closing.close();
  }

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-history-"));
    outbox = createDemoOutbox(join(dir, "outbox.db"), { sendDelayMs: 0 });
  });
  afterAll(async () => {
    await closeServer();
    outbox.close();
    rmSync(dir, { recursive: true, force: true });
    console.log(`history checker (${storeKind}): seed ${SEED}, ${counts.sequences} sequences, ${counts.operations} operations, ${counts.runs} runs, ${counts.events} events read, ${counts.failed} failing`);
    console.log(JSON.stringify(timing));
    console.log([...outcomes].sort().map(([key, value]) => `${key}: ${value}`).join(", "));
  });

  it(`holds every property over ${RUNS} interleavings (seed ${SEED})`, { timeout: Math.max(60_000, RUNS * 2_000) }, async () => {
    const census = join(tmpdir(), `tidemark-history-${storeKind}-violations.jsonl`);
    async function checkSequence(scheduler: fc.Scheduler, plan: SequencePlan): Promise<void> {
      let phaseStart = performance.now();
      const harness = await server();
      timing.server += performance.now() - phaseStart;
      served += 1;
      phaseStart = performance.now();
      const history = await runSequence({ url: harness.url, open: gated.open, gated: gated.gated }, scheduler, plan);
      timing.sequence += performance.now() - phaseStart;
      count(history);
      const violations = checkHistory(history);
      phaseStart = performance.now();
      const storeCheck = await harness.expectNoViolations().then(
        () => undefined,
        (error: unknown) => String(error),
      );
      timing.check += performance.now() - phaseStart;
      if (violations.length === 0 && storeCheck === undefined) return;
      const evidence = { plan, violations, storeCheck, history: { ...history, final: Object.fromEntries(Object.entries(history.final).map(([key, map]) => [key, Object.fromEntries(map)])) } };
      if (KEEP_GOING) {
        // The long run's census: every failing sequence is kept, and the test fails at the end.
        counts.failed += 1;
        appendFileSync(census, `${JSON.stringify(evidence)}\n`);
        return;
      }
      // The whole evidence goes to a file (the last failing sequence's, as shrinking goes on); the error shows its start.
      const report = join(tmpdir(), `tidemark-history-${storeKind}-failure.json`);
      writeFileSync(report, JSON.stringify(evidence, null, 1));
      throw new Error(`${violations.length} violation(s)${storeCheck === undefined ? "" : " and tidemark check failed"}, evidence in ${report}:\n${storeCheck ?? ""}\n${JSON.stringify(violations, null, 1).slice(0, 6_000)}`);
    }
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), sequenceArbitrary, async (scheduler, plan) => {
        if (!KEEP_GOING) return checkSequence(scheduler, plan);
        // The census goes on past a sequence that threw too (a request that failed, a server that
        // logged an error when it was replaced): it is counted and kept with the violations.
        await checkSequence(scheduler, plan).catch((error: unknown) => {
          counts.failed += 1;
          appendFileSync(census, `${JSON.stringify({ plan, error: error instanceof Error ? error.stack : String(error) })}\n`);
        });
      }),
      { seed: SEED, numRuns: RUNS, path: process.env.TIDEMARK_HISTORY_PATH, endOnFailure: process.env.TIDEMARK_HISTORY_PATH !== undefined },
    );
    expect(counts.sequences).toBeGreaterThanOrEqual(RUNS);
    expect(counts.failed, `failing sequences: see ${census}`).toBe(0);
  });

  /**
   * The long run's progress, every 100 sequences, appended to the file `TIDEMARK_HISTORY_PROGRESS`
   * names (with the store's name): one JSON line each, so a run stopped early still says how far it got.
   */
  const progress = process.env.TIDEMARK_HISTORY_PROGRESS;
  const startedAt = Date.now();

  function count(history: History): void {
    counts.sequences += 1;
    counts.operations += history.operations.length;
    counts.runs += history.final.runs.size;
    for (const operation of history.operations) {
      counts.events += operation.read?.events.length ?? 0;
      const refusal = operation.reply !== undefined && operation.reply.status >= 400 ? ` ${operation.reply.body?.error}` : "";
      const outcome = operation.read?.outcome ?? (operation.reply ? `${operation.reply.status}${refusal}` : undefined) ?? (operation.note === "opened" ? "done" : operation.note?.startsWith("transport") ? "error" : "skipped");
      const key = `${operation.kind} ${outcome}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    for (const read of history.final.streams.values()) {
      const key = `final ${read.events.at(-1)?.type}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    if (progress !== undefined && counts.sequences % 100 === 0) {
      // Written once this sequence is counted (its failure, if any, is counted after its check: the next line has it).
      appendFileSync(`${progress}-${storeKind}`, `${JSON.stringify({ storeKind, seed: SEED, ...counts, seconds: Math.round((Date.now() - startedAt) / 1000), at: new Date().toISOString() })}\n`);
    }
  }
});
