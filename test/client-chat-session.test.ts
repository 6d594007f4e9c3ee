/**
 * The chat session over a real server: the draft stays apart from history, a Stop never turns
 * partial text into history, and each action after a Stop does what DESIGN §9 says.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChatSession, createTidemarkClient, type ChatSession, type ChatSnapshot, type TidemarkClient } from "../src/client/index.js";
import type { RunEvent } from "../src/core/index.js";
import { STOPPED_RESPONSE_NOTE } from "../src/runtime/execute-run.js";
import type { ModelRequest } from "../src/runtime/index.js";
import { stopAwareModel, waitForSnapshot } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";
import { startTcpProxy } from "./support/tcp-proxy.js";

const LONG = "Tell me a long story about the tides";
const isSettled = (snapshot: ChatSnapshot) => snapshot.run.isTerminal && snapshot.connection.status === "idle";

describe("the chat session", () => {
  const requests: ModelRequest[] = [];
  let h: Harness;
  let client: TidemarkClient;
  const sessions: ChatSession[] = [];
  beforeAll(async () => {
    h = await startHarness({ model: stopAwareModel(requests), heartbeatMs: 100 });
    client = createTidemarkClient({ baseUrl: h.url });
  });
  afterAll(async () => {
    for (const session of sessions) session.close();
    await h.expectNoViolations();
    await h.close();
  });

  const newSession = (threadId?: string) => {
    const session = createChatSession({ client, threadId, stream: { retry: { initialDelayMs: 10, maxAttempts: 4 } } });
    sessions.push(session);
    return session;
  };
  const serverHistory = async (threadId: string) => (await client.getHistory(threadId)).messages;

  /** Sends a long request, lets some text stream, presses Stop, and waits until the run is cancelled. */
  async function stoppedSession() {
    const session = newSession();
    await session.send(LONG);
    await waitForSnapshot(session, (snapshot) => (snapshot.draft?.text.length ?? 0) > 40);
    const reply = await session.stop();
    // stop() resolves once the run has ended (issue 11 item 4), no longer at the cancel's acceptance.
    expect(reply).toMatchObject({ status: "cancelled", already_terminal: false });
    const stopped = await waitForSnapshot(session, (snapshot) => snapshot.run.status === "cancelled");
    return { session, stopped, threadId: stopped.threadId!, reply: reply! };
  }

  it("streams a draft apart from history and moves it into history on message.published", async () => {
    const session = newSession();
    const seen: ChatSnapshot[] = [];
    session.subscribe((snapshot) => seen.push(snapshot));
    await session.send("Write a short answer");
    const done = await waitForSnapshot(session, isSettled);
    expect(done.run.status).toBe("completed");
    expect(done.draft).toBeNull();
    const history = await serverHistory(done.threadId!);
    expect(done.history.map((message) => [message.role, message.content])).toEqual(history.map((message) => [message.role, message.content]));
    expect(history.map((message) => message.role)).toEqual(["user", "assistant"]);
    const thread = await client.getThread(done.threadId!);
    expect([done.stateVersion, done.headCheckpointId]).toEqual([thread.state_version, thread.head_checkpoint_id]);
    // While it streamed, the text was a draft only: never in history before it was published.
    const streaming = seen.filter((snapshot) => snapshot.draft?.status === "streaming");
    expect(streaming.length).toBeGreaterThan(3);
    for (const snapshot of streaming) expect(snapshot.history.some((message) => message.message_id === snapshot.draft!.messageId)).toBe(false);
    expect(streaming.at(-1)!.draft!.text).toBe(history[1]!.content);
  });

  it("Stop mid-stream: history gets no partial text; the draft is kept apart, exactly as far as it was seen", async () => {
    const { session, stopped, threadId, reply } = await stoppedSession();
    expect(stopped.history.map((message) => message.role)).toEqual(["user"]);
    expect((await serverHistory(threadId)).map((message) => message.role)).toEqual(["user"]);
    expect(stopped.draft).toMatchObject({ status: "stopped" });
    // Deltas that arrived after the Stop are not in the draft: it ends at its own last seq.
    const events = await h.events(stopped.draft!.runId, { after: 0 });
    const shown = events.filter((event): event is Extract<RunEvent, { type: "message.delta" }> => event.type === "message.delta" && event.seq <= stopped.draft!.lastSeq);
    expect(stopped.draft!.text).toBe(shown.map((event) => event.text).join(""));
    expect(stopped.lastCancel).toEqual(reply);
    expect(stopped.run).toMatchObject({ isTerminal: true, canContinue: true, isCancelling: false, canStop: false });
    expect(stopped.actions).toMatchObject({ canContinue: true, canChangeAndContinue: true, canBranch: true, canSaveWhatISaw: true, canDeleteDraft: true, canStop: false });
    await waitForSnapshot(session, isSettled);
  });

  it("continueFromSavedPoint runs the stopped step again; the discarded text is never glued on", async () => {
    const { session, stopped, threadId, reply } = await stoppedSession();
    const before = requests.length;
    const run = await session.continueFromSavedPoint();
    expect(run).toMatchObject({ input_message_id: null, base_checkpoint_id: reply.resume_checkpoint_id });
    const done = await waitForSnapshot(session, isSettled);
    expect(done.run.status).toBe("completed");
    expect(done.draft).toBeNull();
    expect(done.history.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect((await serverHistory(threadId)).map((message) => message.content)).toEqual(done.history.map((message) => message.content));
    const request = requests[before]!;
    expect(request.messages[0]).toEqual({ role: "system", content: STOPPED_RESPONSE_NOTE });
    expect(JSON.stringify(request.messages)).not.toContain(stopped.draft!.text.trim());
  });

  it("changeAndContinue sends a new message from the saved point", async () => {
    const { session, threadId, reply } = await stoppedSession();
    const run = await session.changeAndContinue("Just a short summary, please");
    expect(run).toMatchObject({ base_checkpoint_id: reply.resume_checkpoint_id, state_version: reply.accepted_state_version! + 1 });
    const done = await waitForSnapshot(session, isSettled);
    expect(done.history.map((message) => [message.role, message.role === "user" ? message.content : "…"])).toEqual([
      ["user", LONG],
      ["user", "Just a short summary, please"],
      ["assistant", "…"],
    ]);
    expect((await serverHistory(threadId)).map((message) => message.message_id)).toEqual(done.history.map((message) => message.message_id));
  });

  it("saveWhatISaw keeps exactly the seen text as a labelled fragment; Continue still works after it", async () => {
    const { session, stopped, threadId } = await stoppedSession();
    const fragment = await session.saveWhatISaw();
    expect(fragment).toMatchObject({ publication_status: "fragment", content: stopped.draft!.text, run_id: stopped.draft!.runId });
    const saved = await waitForSnapshot(session, (snapshot) => snapshot.markers.some((marker) => marker.type === "fragment"));
    expect(saved.draft).toMatchObject({ status: "saved", fragmentMessageId: fragment.message_id });
    expect(saved.stateVersion).toBe(stopped.stateVersion! + 1);
    expect(saved.history.map((message) => message.publication_status)).toEqual(["published", "fragment"]);
    expect(saved.actions.canSaveWhatISaw).toBe(false);
    await session.continueFromSavedPoint();
    const done = await waitForSnapshot(session, isSettled);
    expect(done.run.status).toBe("completed");
    expect((await serverHistory(threadId)).map((message) => [message.role, message.publication_status])).toEqual([
      ["user", "published"],
      ["assistant", "fragment"],
      ["assistant", "published"],
    ]);
  });

  it("after Save what I saw (and after a branch from it), a reload still offers Continue, and Continue tells the model of the Stop", async () => {
    const { session, threadId } = await stoppedSession();
    const fragment = await session.saveWhatISaw();
    const reloaded = newSession(threadId);
    const loaded = await waitForSnapshot(reloaded, (snapshot) => snapshot.stateVersion === fragment.state_version);
    expect(loaded.resumePoint).toEqual({ checkpointId: fragment.checkpoint_id, stateVersion: fragment.state_version });
    expect(loaded.actions).toMatchObject({ canContinue: true, canBranch: true });

    const branch = await client.fork(threadId, { checkpoint_id: fragment.checkpoint_id });
    const onBranch = newSession(branch.thread_id);
    const branchLoaded = await waitForSnapshot(onBranch, (snapshot) => snapshot.stateVersion === branch.state_version);
    expect(branchLoaded.resumePoint).toEqual({ checkpointId: branch.head_checkpoint_id, stateVersion: branch.state_version });
    expect(branchLoaded.forkedFrom).toEqual({ thread_id: threadId, checkpoint_id: fragment.checkpoint_id, state_version: fragment.state_version });

    const before = requests.length;
    await reloaded.continueFromSavedPoint();
    expect((await waitForSnapshot(reloaded, isSettled)).run.status).toBe("completed");
    expect(requests[before]!.messages[0]).toEqual({ role: "system", content: STOPPED_RESPONSE_NOTE });
  });

  it("a reload after an answer offers no Continue: the head is a published message", async () => {
    const session = newSession();
    await session.send("Write a short answer");
    const done = await waitForSnapshot(session, isSettled);
    const reloaded = newSession(done.threadId!);
    const loaded = await waitForSnapshot(reloaded, (snapshot) => snapshot.stateVersion === done.stateVersion && snapshot.history.length === 2);
    expect(loaded.resumePoint).toBeNull();
    expect(loaded.actions.canContinue).toBe(false);
  });

  it("deleteDraft drops an unsaved draft locally, and deletes a saved fragment on the server", async () => {
    const first = await stoppedSession();
    await first.session.deleteDraft();
    expect(first.session.getSnapshot().draft).toBeNull();
    expect((await client.getThread(first.threadId)).state_version).toBe(first.stopped.stateVersion);

    const second = await stoppedSession();
    const fragment = await second.session.saveWhatISaw();
    await second.session.deleteDraft();
    const deleted = second.session.getSnapshot();
    expect(deleted.draft).toBeNull();
    expect(deleted.history.some((message) => message.message_id === fragment.message_id)).toBe(false);
    expect(deleted.stateVersion).toBe(second.stopped.stateVersion! + 2);
    expect((await serverHistory(second.threadId)).map((message) => message.role)).toEqual(["user"]);
    // The saved point followed this session's own transitions: Continue builds on the new head.
    await second.session.continueFromSavedPoint();
    expect((await waitForSnapshot(second.session, isSettled)).run.status).toBe("completed");
  });

  it("a Stop pressed before the create's reply still stops the run it names", async () => {
    const session = newSession();
    const sending = session.send(LONG);
    await waitForSnapshot(session, (snapshot) => snapshot.run.status === "starting" && snapshot.threadId !== null);
    const reply = await session.stop();
    expect(reply?.run_id).toBe(session.getSnapshot().run.runId);
    await sending;
    const done = await waitForSnapshot(session, (snapshot) => snapshot.run.status === "cancelled");
    expect(done.history.every((message) => message.role === "user")).toBe(true);
    expect((await serverHistory(done.threadId!)).every((message) => message.role === "user")).toBe(true);
  });

  it("an unreachable server is an explicit failure, not a cancel: the run goes on", async () => {
    const proxy = await startTcpProxy(h.url);
    const session = createChatSession({ client: createTidemarkClient({ baseUrl: proxy.url }), stream: { retry: { initialDelayMs: 5, maxAttempts: 3 } } });
    sessions.push(session);
    await session.send(LONG);
    // The history read that follows the send has landed too (else closing the proxy races it).
    await waitForSnapshot(session, (snapshot) => (snapshot.draft?.text.length ?? 0) > 10 && snapshot.history.length === 1);
    await proxy.close();
    const failed = await waitForSnapshot(session, (snapshot) => snapshot.connection.isFailed);
    expect(failed.connection.failure).toMatchObject({ reason: "unreachable", attempts: 3 });
    expect(failed.run.status).toBe("running");
    expect(failed.history.map((message) => message.role)).toEqual(["user"]);
    expect((await client.getRun(failed.run.runId!)).status).toBe("running");
    await client.cancelRun(failed.run.runId!, { waitMs: 5_000 });
  });
});
