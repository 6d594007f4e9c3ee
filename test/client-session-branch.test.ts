/**
 * The chat session across tabs over a real server: branching at the saved point, race 3 (two
 * sessions resuming one checkpoint) resolved by reload or branch, re-joining a run another tab
 * started, and approvals.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChatSession, createTidemarkClient, type ChatSession, type ChatSnapshot, type TidemarkClient } from "../src/client/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { stopAwareModel, waitForSnapshot } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";

const LONG = "Tell me a long story about branches";
const isSettled = (snapshot: ChatSnapshot) => snapshot.run.isTerminal && snapshot.connection.status === "idle";

describe("chat sessions across tabs", () => {
  let h: Harness;
  let client: TidemarkClient;
  let outbox: DemoOutbox;
  let dir: string;
  const sessions: ChatSession[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-client-session-"));
    outbox = createDemoOutbox(join(dir, "outbox.db"));
    h = await startHarness({ model: stopAwareModel(), tools: createDemoTools({ outbox, searchDelayMs: 5 }) });
    client = createTidemarkClient({ baseUrl: h.url });
  });
  afterAll(async () => {
    for (const session of sessions) session.close();
    await h.expectNoViolations();
    await h.close();
    outbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const newSession = (threadId?: string) => {
    const session = createChatSession({ client, threadId });
    sessions.push(session);
    return session;
  };
  const roles = async (threadId: string) => (await client.getHistory(threadId)).messages.map((message) => message.role);

  async function stoppedSession() {
    const session = newSession();
    await session.send(LONG);
    await waitForSnapshot(session, (snapshot) => (snapshot.draft?.text.length ?? 0) > 20);
    const reply = (await session.stop())!;
    const stopped = await waitForSnapshot(session, (snapshot) => snapshot.run.status === "cancelled");
    return { session, stopped, threadId: stopped.threadId!, reply };
  }

  it("branch() forks at the saved point and switches the session; both paths stay valid", async () => {
    const { session, threadId, reply } = await stoppedSession();
    const branch = await session.branch();
    expect(branch.forked_from).toMatchObject({ thread_id: threadId, checkpoint_id: reply.resume_checkpoint_id });
    const switched = session.getSnapshot();
    expect(switched).toMatchObject({ threadId: branch.thread_id, stateVersion: branch.state_version, draft: null, conflict: null });
    expect(switched.history.map((message) => message.role)).toEqual(["user"]);
    expect(switched.actions).toMatchObject({ canContinue: true, canSend: true });
    await session.continueFromSavedPoint();
    const done = await waitForSnapshot(session, isSettled);
    expect(done.run.status).toBe("completed");
    expect(await roles(branch.thread_id)).toEqual(["user", "assistant"]);
    expect(await roles(threadId)).toEqual(["user"]);
  });

  it("race 3: two sessions continue one checkpoint; one runs, the other gets the conflict and branches", async () => {
    const { session: tabA, threadId, reply } = await stoppedSession();
    const tabB = newSession(threadId);
    const loaded = await waitForSnapshot(tabB, (snapshot) => snapshot.stateVersion === reply.accepted_state_version);
    expect(loaded.resumePoint).toEqual({ checkpointId: reply.resume_checkpoint_id, stateVersion: reply.accepted_state_version });
    const [a, b] = await Promise.all([tabA.continueFromSavedPoint(), tabB.continueFromSavedPoint()]);
    expect([a, b].filter((run) => run !== undefined)).toHaveLength(1);
    const [winner, loser] = a !== undefined ? [tabA, tabB] : [tabB, tabA];
    const conflicted = loser.getSnapshot();
    expect(conflicted.conflict).toMatchObject({
      currentStateVersion: reply.accepted_state_version! + 1,
      forkCheckpointId: reply.resume_checkpoint_id,
      allowedActions: ["reload", `fork_from_${reply.resume_checkpoint_id}`],
      attempted: { kind: "continue" },
    });
    expect(conflicted.actions).toMatchObject({ canResolveConflict: true, canSend: false, canContinue: false, canBranch: true });
    expect(conflicted.run.isActive).toBe(false); // the refused run never started

    await loser.resolveConflict("branch");
    const branched = await waitForSnapshot(loser, isSettled);
    expect(branched.threadId).not.toBe(threadId);
    expect(branched.run.status).toBe("completed");
    expect((await waitForSnapshot(winner, isSettled)).run.status).toBe("completed");
    // Two valid stories, never mixed: each thread has one answer after the shared input.
    expect(await roles(threadId)).toEqual(["user", "assistant"]);
    expect(await roles(branched.threadId!)).toEqual(["user", "assistant"]);
  });

  it("race 3 resolved by reload: the loser follows the winner's run and ends with its history", async () => {
    const { session: tabA, threadId } = await stoppedSession();
    const tabB = newSession(threadId);
    await waitForSnapshot(tabB, (snapshot) => snapshot.resumePoint !== null);
    await tabA.changeAndContinue("Tab A's change");
    expect(await tabB.changeAndContinue("Tab B's change")).toBeUndefined();
    expect(tabB.getSnapshot().conflict?.attempted).toEqual({ kind: "change_and_continue", text: "Tab B's change" });
    await tabB.resolveConflict("reload");
    const followed = await waitForSnapshot(tabB, (snapshot) => snapshot.run.status === "completed" && snapshot.connection.status === "idle");
    expect(followed.conflict).toBeNull();
    expect(followed.run.runId).toBe(tabA.getSnapshot().run.runId);
    const settledA = await waitForSnapshot(tabA, isSettled);
    expect(followed.history.map((message) => message.content)).toEqual(settledA.history.map((message) => message.content));
    expect(followed.history.map((message) => message.content)).not.toContain("Tab B's change");
  });

  it("a session opened on a thread with a running run follows it: draft apart, then history", async () => {
    const tabA = newSession();
    await tabA.send("Write a short answer, slowly");
    const threadId = tabA.getSnapshot().threadId!;
    const tabB = newSession(threadId);
    const done = await waitForSnapshot(tabB, (snapshot) => snapshot.run.status === "completed" && snapshot.connection.status === "idle");
    expect(done.run.runId).toBe(tabA.getSnapshot().run.runId);
    expect(done.draft).toBeNull();
    expect(done.history.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(done.history.map((message) => message.content)).toEqual((await client.getHistory(threadId)).messages.map((message) => message.content));
  });

  it("approve() and reject() decide a consequential operation the run waits for", async () => {
    const session = newSession();
    await session.send("Please email ada@example.com that the quote is ready");
    const waiting = await waitForSnapshot(session, (snapshot) => snapshot.actions.canApprove);
    expect(waiting.run).toMatchObject({ status: "interrupted", isAwaitingApproval: true, pendingApproval: { tool: "send_email", preview: { to: "***@example.com" } } });
    await session.approve();
    const approved = await waitForSnapshot(session, isSettled);
    expect(approved.run.status).toBe("completed");
    expect(approved.operations).toEqual([expect.objectContaining({ tool: "send_email", phase: "committed" })]);
    expect(approved.history.at(-1)!.content).toMatch(/handed to the outbox/);

    await session.send("email bob@example.com the draft");
    await waitForSnapshot(session, (snapshot) => snapshot.actions.canApprove);
    await session.reject("not now");
    const rejected = await waitForSnapshot(session, isSettled);
    expect(rejected.operations.map((operation) => operation.phase)).toEqual(["committed", "abandoned"]);
    expect(rejected.history.at(-1)!.content).toMatch(/not sent/);
  });
});
