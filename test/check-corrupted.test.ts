/**
 * `tidemark check` on a real SQLite file: state built through the Store API is clean, and each
 * corruption written behind the store's back with raw SQL is found, by invariant, with nothing
 * spurious around it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkStore, formatCheckReport, type CheckReport } from "../src/check/index.js";
import { createId } from "../src/core/ids.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";

/**
 * The ids of one seeded thread: v1 root, v2 input 1, v3 answer 1, v4 input 2, v5 cancel 2. The
 * first run's answer records its step `step-1`; the second run's plan had `search` working and
 * `write` (after it) not started when it was cancelled.
 */
interface Seeded {
  tenantId: string;
  threadId: string;
  completedRunId: string;
  answerCheckpointId: string;
  cancelledRunId: string;
  cancelCheckpointId: string;
}

let now = 1_700_000_000_000;
const tick = (): number => (now += 1000);

function expectKind<T extends { kind: string }, K extends T["kind"]>(result: T, kind: K): Extract<T, { kind: K }> {
  expect(result.kind).toBe(kind);
  return result as Extract<T, { kind: K }>;
}

/** One run that answers and completes, then one that is stopped while running. */
async function seedThread(store: Store, tenantId: string): Promise<Seeded> {
  const threadId = createId("thr");
  await store.createThread({ tenantId, threadId, checkpointId: createId("cp"), metadata: {}, now: tick() });

  const startRun = async (content: string, expectedStateVersion: number): Promise<string> => {
    const runId = createId("run");
    expectKind(
      await store.createRun({
        tenantId,
        runId,
        threadId,
        input: { role: "user", content },
        inputMessageId: createId("msg"),
        checkpointId: createId("cp"),
        idempotencyKey: null,
        requestHash: `hash-${runId}`,
        model: "demo",
        onDisconnect: "continue",
        recoveryPolicy: "fail",
        expectedStateVersion,
        now: tick(),
      }),
      "created",
    );
    const claimed = await store.claimRun({ tenantId, runId, owner: "worker-1", leaseExpiresAt: now + 30_000, now: tick() });
    expect(claimed?.status).toBe("running");
    return runId;
  };

  const completedRunId = await startRun("hello", 1);
  const answerCheckpointId = createId("cp");
  const published = expectKind(
    await store.publishMessage({
      tenantId,
      runId: completedRunId,
      messageId: createId("msg"),
      checkpointId: answerCheckpointId,
      role: "assistant",
      content: "hi there",
      completedStepId: "step-1",
      recordsStep: true,
      stats: { llmCallCount: 1, outputTokens: 3 },
      complete: true,
      now: tick(),
    }),
    "published",
  );
  expect(published.run.status).toBe("completed");

  const cancelledRunId = await startRun("tell me a long story", 3);
  await store.saveSteps({
    tenantId,
    runId: cancelledRunId,
    steps: [
      { stepId: "search", ordinal: 0, status: "in_progress", startedAt: now },
      { stepId: "write", ordinal: 1, status: "not_started", dependsOn: ["search"] },
    ],
  });
  const cancelCheckpointId = createId("cp");
  const accepted = expectKind(
    await store.requestCancel({
      tenantId,
      runId: cancelledRunId,
      reason: "user_stop",
      checkpointId: cancelCheckpointId,
      pendingStep: { stepId: "step-1", kind: "model", inputHash: "h" },
      now: tick(),
    }),
    "accepted",
  );
  expect(accepted.run.status).toBe("cancel_requested");
  const finished = await store.finishRun({
    tenantId,
    runId: cancelledRunId,
    to: "cancelled",
    from: ["cancel_requested", "cancelling"],
    stats: { llmCallCount: 1, discardedGenerationCount: 1, discardedStreamChars: 12 },
    cancelledGeneration: { discardedStreamChars: 12, discardedOutputTokens: 4, tokensEstimated: true },
    now: tick(),
  });
  expect(finished?.status).toBe("cancelled");

  return { tenantId, threadId, completedRunId, answerCheckpointId, cancelledRunId, cancelCheckpointId };
}

/** A corruption written with raw SQL, and the invariants it must (and only it may) break. */
interface Corruption {
  name: string;
  corrupt: (db: Database.Database, seeded: Seeded) => void;
  invariants: number[];
}

const corruptions: Corruption[] = [
  {
    // The answer's checkpoint goes: its message is unbacked (1), the second run's base and the next
    // checkpoint both name it (3, 3), v3 is missing from the chain (5), and the step it completed
    // has lost what made it durable (10).
    name: "a checkpoint a message points at is deleted",
    corrupt: (db, s) => {
      db.prepare("DELETE FROM checkpoints WHERE tenant_id = ? AND checkpoint_id = ?").run(s.tenantId, s.answerCheckpointId);
    },
    invariants: [1, 3, 3, 5, 10],
  },
  {
    // Written with its own checkpoint as the new head, so only the cancel boundary is broken.
    name: "the cancelled run publishes after its cancel",
    corrupt: (db, s) => {
      const checkpointId = createId("cp");
      const messageId = createId("msg");
      db.prepare(
        `INSERT INTO checkpoints (tenant_id, checkpoint_id, thread_id, parent_checkpoint_id, state_version, kind, run_id,
           message_id, created_at)
         VALUES (?, ?, ?, ?, 6, 'message_published', ?, ?, ?)`,
      ).run(s.tenantId, checkpointId, s.threadId, s.cancelCheckpointId, s.cancelledRunId, messageId, tick());
      db.prepare(
        `INSERT INTO messages (tenant_id, message_id, thread_id, position, role, content, run_id, state_version,
           checkpoint_id, publication_status, created_at)
         VALUES (?, ?, ?, 3, 'assistant', 'the late end of the story', ?, 6, ?, 'published', ?)`,
      ).run(s.tenantId, messageId, s.threadId, s.cancelledRunId, checkpointId, tick());
      db.prepare(
        `UPDATE threads SET state_version = 6, head_checkpoint_id = ?, next_position = 4
         WHERE tenant_id = ? AND thread_id = ?`,
      ).run(checkpointId, s.tenantId, s.threadId);
    },
    invariants: [4],
  },
  {
    // The cancel checkpoint moves from v5 to v6 (and everything naming v5 with it): v5 is missing
    // and v6's parent is two versions back.
    name: "a gap in the checkpoint versions",
    corrupt: (db, s) => {
      db.prepare("UPDATE checkpoints SET state_version = 6 WHERE tenant_id = ? AND checkpoint_id = ?").run(
        s.tenantId,
        s.cancelCheckpointId,
      );
      db.prepare("UPDATE threads SET state_version = 6 WHERE tenant_id = ? AND thread_id = ?").run(s.tenantId, s.threadId);
      db.prepare("UPDATE runs SET state_version = 6, cancel_state_version = 6 WHERE tenant_id = ? AND run_id = ?").run(
        s.tenantId,
        s.cancelledRunId,
      );
    },
    invariants: [5, 5],
  },
  {
    // The completed run "restarts": the step leaves a terminal status and the history now ends
    // somewhere other than the run's recorded status.
    name: "a run transition leaves a terminal status",
    corrupt: (db, s) => {
      db.prepare(
        `INSERT INTO run_transitions (tenant_id, run_id, ordinal, from_status, to_status, at)
         VALUES (?, ?, 4, 'completed', 'running', ?)`,
      ).run(s.tenantId, s.completedRunId, tick());
    },
    invariants: [6, 6],
  },
  {
    name: "a run continues from a checkpoint that does not exist",
    corrupt: (db, s) => {
      db.prepare("UPDATE runs SET base_checkpoint_id = ? WHERE tenant_id = ? AND run_id = ?").run(
        createId("cp"),
        s.tenantId,
        s.cancelledRunId,
      );
    },
    invariants: [3],
  },
  {
    name: "a cancelled run's step is left working",
    corrupt: (db, s) => {
      db.prepare("UPDATE run_steps SET status = 'in_progress', ended_at = NULL WHERE tenant_id = ? AND run_id = ? AND step_id = 'search'").run(
        s.tenantId,
        s.cancelledRunId,
      );
    },
    invariants: [9],
  },
  {
    name: "a completed step loses the checkpoint that made it durable",
    corrupt: (db, s) => {
      db.prepare("UPDATE run_steps SET checkpoint_id = NULL WHERE tenant_id = ? AND run_id = ?").run(s.tenantId, s.completedRunId);
    },
    invariants: [10],
  },
  {
    name: "a step starts after its dependency was cancelled",
    corrupt: (db, s) => {
      db.prepare("UPDATE run_steps SET started_at = ? WHERE tenant_id = ? AND run_id = ? AND step_id = 'write'").run(tick(), s.tenantId, s.cancelledRunId);
    },
    invariants: [11],
  },
  {
    // Written with its own checkpoint as the new head, so only the cancel fence of the plan is broken.
    name: "a step of the cancelled run completes after its cancel",
    corrupt: (db, s) => {
      const checkpointId = createId("cp");
      db.prepare(
        `INSERT INTO checkpoints (tenant_id, checkpoint_id, thread_id, parent_checkpoint_id, state_version, kind, run_id,
           completed_step_id, created_at)
         VALUES (?, ?, ?, ?, 6, 'step_completed', ?, 'search', ?)`,
      ).run(s.tenantId, checkpointId, s.threadId, s.cancelCheckpointId, s.cancelledRunId, tick());
      db.prepare("UPDATE threads SET state_version = 6, head_checkpoint_id = ? WHERE tenant_id = ? AND thread_id = ?").run(
        checkpointId,
        s.tenantId,
        s.threadId,
      );
      db.prepare(
        "UPDATE run_steps SET status = 'completed', checkpoint_id = ? WHERE tenant_id = ? AND run_id = ? AND step_id = 'search'",
      ).run(checkpointId, s.tenantId, s.cancelledRunId);
    },
    invariants: [12],
  },
];

describe("checkStore on a corrupted SQLite file", () => {
  let directory: string;
  let cleanPath: string;
  let clean: Seeded;
  let seeded: Seeded[];
  let cleanReport: CheckReport;

  beforeAll(async () => {
    directory = fs.mkdtempSync(path.join(os.tmpdir(), "tidemark-check-"));
    cleanPath = path.join(directory, "clean.db");
    const store = createSqliteStore({ path: cleanPath });
    try {
      // One untouched thread in another tenant, then one thread per corruption.
      clean = await seedThread(store, "tenant-b");
      seeded = [];
      for (const _corruption of corruptions) seeded.push(await seedThread(store, "tenant-a"));
      cleanReport = await checkStore(store);
    } finally {
      await store.close();
    }
  });

  afterAll(() => {
    if (directory) fs.rmSync(directory, { recursive: true, force: true });
  });

  it("finds nothing in state built through the Store API", () => {
    expect(cleanReport.violations).toEqual([]);
    expect(cleanReport).toMatchObject({
      threadsChecked: corruptions.length + 1,
      runsChecked: 2 * (corruptions.length + 1),
      messagesChecked: 3 * (corruptions.length + 1),
      notApplicable: [],
    });
  });

  it("finds each seeded violation by invariant, and nothing else", async () => {
    // Fold the WAL into the main file so that a copy of the .db alone holds every row.
    const folder = new Database(cleanPath);
    folder.pragma("wal_checkpoint(TRUNCATE)");
    folder.close();
    const corruptPath = path.join(directory, "corrupt.db");
    fs.copyFileSync(cleanPath, corruptPath);

    const db = new Database(corruptPath);
    try {
      db.transaction(() => corruptions.forEach((corruption, index) => corruption.corrupt(db, seeded[index]!)))();
    } finally {
      db.close();
    }

    const store = createSqliteStore({ path: corruptPath });
    let report: CheckReport;
    try {
      report = await checkStore(store);
    } finally {
      await store.close();
    }

    const found = (threadId: string): number[] =>
      report.violations.filter((violation) => violation.threadId === threadId).map((violation) => violation.invariant);
    expect(found(clean.threadId)).toEqual([]);
    corruptions.forEach((corruption, index) => {
      expect({ corruption: corruption.name, invariants: found(seeded[index]!.threadId) }).toEqual({
        corruption: corruption.name,
        invariants: corruption.invariants,
      });
    });
    const expectedTotal = corruptions.reduce((sum, corruption) => sum + corruption.invariants.length, 0);
    expect(report.violations).toHaveLength(expectedTotal);

    const [deleted, late, gap, terminal, lineage, unfinished, undurable, started, fenced] = seeded as Seeded[] as [
      Seeded,
      Seeded,
      Seeded,
      Seeded,
      Seeded,
      Seeded,
      Seeded,
      Seeded,
      Seeded,
    ];
    expect(report.violations).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ invariant: 1, threadId: deleted.threadId, checkpointId: deleted.answerCheckpointId }),
        expect.objectContaining({ invariant: 4, threadId: late.threadId, runId: late.cancelledRunId }),
        expect.objectContaining({ invariant: 5, threadId: gap.threadId, detail: "no checkpoint holds v5 of 6" }),
        expect.objectContaining({
          invariant: 6,
          threadId: terminal.threadId,
          runId: terminal.completedRunId,
          detail: expect.stringContaining("leaves terminal status completed"),
        }),
        expect.objectContaining({ invariant: 3, threadId: lineage.threadId, runId: lineage.cancelledRunId }),
        expect.objectContaining({ invariant: 9, threadId: unfinished.threadId, runId: unfinished.cancelledRunId, stepId: "search" }),
        expect.objectContaining({ invariant: 10, threadId: undurable.threadId, runId: undurable.completedRunId, stepId: "step-1" }),
        expect.objectContaining({ invariant: 11, threadId: started.threadId, runId: started.cancelledRunId, stepId: "write" }),
        expect.objectContaining({
          invariant: 12,
          threadId: fenced.threadId,
          runId: fenced.cancelledRunId,
          stepId: "search",
          detail: expect.stringContaining("at v6, after its cancel was accepted at v5"),
        }),
      ]),
    );

    const lines = formatCheckReport(report).split("\n");
    expect(lines).toHaveLength(expectedTotal + 1);
    expect(lines[0]).toMatch(/^invariant \d+ thr_\w+: /);
    expect(lines).not.toContainEqual(expect.stringContaining("not applicable"));
    const threads = corruptions.length + 1;
    expect(lines.at(-1)).toBe(`${expectedTotal} violations in ${threads} threads (${2 * threads} runs, ${3 * threads + 1} messages)`);
  });
});
