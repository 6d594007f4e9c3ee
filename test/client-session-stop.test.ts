/**
 * The chat session's Stop over a real server: `await stop()` resolves once the run has ended,
 * so a Continue right after it works; a Stop while the network is down is reported as not
 * confirmed, retried until the server answers, and then shows the truth (cancelled, or too late:
 * completed, with the saved answer); every refusal is a typed error with a stable code.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createChatSession,
  createTidemarkClient,
  TidemarkApiError,
  TidemarkClientError,
  type ChatSession,
  type ChatSnapshot,
  type TidemarkClient,
} from "../src/client/index.js";
import { createGatedModel, createNetworkSwitch, waitForSnapshot, type GatedModel } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";

const isSettled = (snapshot: ChatSnapshot) => snapshot.run.isTerminal && snapshot.connection.status === "idle";
const hasDraft = (snapshot: ChatSnapshot) => (snapshot.draft?.text.length ?? 0) > 0;

/** What `promise` rejects with. */
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );

describe("the chat session's Stop", () => {
  let h: Harness;
  let gated: GatedModel;
  let client: TidemarkClient;
  const sessions: ChatSession[] = [];
  beforeAll(async () => {
    gated = createGatedModel();
    h = await startHarness({ model: gated.model, heartbeatMs: 100 });
    client = createTidemarkClient({ baseUrl: h.url });
  });
  afterAll(async () => {
    for (const session of sessions) session.close();
    await h.expectNoViolations();
    await h.close();
  });

  const newSession = (sessionClient = client) => {
    const session = createChatSession({ client: sessionClient, stream: { retry: { initialDelayMs: 10, maxAttempts: 3 } } });
    sessions.push(session);
    return session;
  };
  const runStatus = async (runId: string) => (await client.getRun(runId)).status;

  it("await stop() resolves once the run is cancelled, so continueFromSavedPoint right after it works", async () => {
    const session = newSession();
    await session.send("Why do tides turn?");
    await waitForSnapshot(session, hasDraft);
    const reply = await session.stop();
    // Nothing awaited in between: the run has ended when stop() resolves.
    expect(reply).toMatchObject({ status: "cancelled", already_terminal: false });
    const stopped = session.getSnapshot();
    expect(stopped.run.status).toBe("cancelled");
    expect(stopped.stop).toMatchObject({ status: "confirmed", outcome: "cancelled", failedAttempts: 0 });
    expect(await runStatus(reply!.run_id)).toBe("cancelled");
    expect(stopped.actions.canContinue).toBe(true);

    const continued = await session.continueFromSavedPoint();
    expect(continued).toMatchObject({ base_checkpoint_id: reply!.resume_checkpoint_id, input_message_id: null });
    await waitForSnapshot(session, hasDraft);
    gated.release();
    const done = await waitForSnapshot(session, isSettled);
    expect(done.run.status).toBe("completed");
    expect(done.stop).toBeNull();
    expect(done.history.map((message) => message.role)).toEqual(["user", "assistant"]);
  });

  it("every refusal is typed: the session's own as TidemarkClientError, the server's as TidemarkApiError", async () => {
    const session = newSession();
    expect(await rejection(session.continueFromSavedPoint())).toMatchObject({ code: "no_saved_point" });
    expect(await rejection(session.saveWhatISaw())).toMatchObject({ code: "no_stopped_draft" });
    expect(await rejection(session.approve())).toMatchObject({ code: "run_not_interrupted" });
    expect(await rejection(session.branch())).toMatchObject({ code: "no_saved_point" });

    await session.send("Why do tides turn?");
    await waitForSnapshot(session, hasDraft);
    const busy = await rejection(session.send("And the moon?"));
    expect(TidemarkClientError.isInstance(busy)).toBe(true);
    expect(busy).toMatchObject({ name: "TidemarkClientError", code: "run_in_progress" });
    expect(TidemarkApiError.isInstance(busy)).toBe(false);
    await session.stop();

    // The server's refusal: the thread is gone.
    await client.deleteThread(session.getSnapshot().threadId!);
    const refused = await rejection(session.send("Still there?"));
    expect(TidemarkApiError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({ status: 404, code: "thread_not_found" });
  });

  it("a Stop while the network is down is unconfirmed and retried; when the network returns, it is cancelled", async () => {
    const network = createNetworkSwitch();
    const session = newSession(createTidemarkClient({ baseUrl: h.url, fetch: network.fetch }));
    await session.send("Why do tides turn?");
    const streaming = await waitForSnapshot(session, hasDraft);
    const runId = streaming.run.runId!;

    network.cut();
    const stopping = session.stop();
    const unconfirmed = await waitForSnapshot(session, (snapshot) => (snapshot.stop?.failedAttempts ?? 0) >= 2);
    expect(unconfirmed.stop).toMatchObject({ runId, status: "unconfirmed", failure: "The server cannot be reached.", outcome: null });
    // Not "stopped" yet: the run is going on on the server, and the session says nothing else.
    expect(unconfirmed.run.status).toBe("running");
    expect(unconfirmed.draft).toMatchObject({ status: "stopped" });
    expect(unconfirmed.actions).toMatchObject({ canStop: false, canContinue: false, canSaveWhatISaw: false });
    expect(await runStatus(runId)).toBe("running");
    expect(network.refused.filter((path) => path === `/v1/runs/${runId}/cancel`).length).toBeGreaterThanOrEqual(2);

    network.restore();
    const reply = await stopping;
    expect(reply).toMatchObject({ status: "cancelled", already_terminal: false });
    const stopped = session.getSnapshot();
    expect(stopped.stop).toMatchObject({ status: "confirmed", outcome: "cancelled" });
    expect(stopped.run.status).toBe("cancelled");
    expect(stopped.actions).toMatchObject({ canContinue: true, canSaveWhatISaw: true });
    expect(await runStatus(runId)).toBe("cancelled");
    const settled = await waitForSnapshot(session, isSettled);
    expect(settled.history.map((message) => message.role)).toEqual(["user"]);
  });

  it("a Stop that reaches the server too late says so: the run completed, and its saved answer replaces the draft", async () => {
    const network = createNetworkSwitch();
    const session = newSession(createTidemarkClient({ baseUrl: h.url, fetch: network.fetch }));
    await session.send("Why do tides turn?");
    const streaming = await waitForSnapshot(session, hasDraft);
    const runId = streaming.run.runId!;

    network.cut();
    const stopping = session.stop();
    await waitForSnapshot(session, (snapshot) => snapshot.stop?.status === "unconfirmed");
    // The Stop never reached the server: the answer completes and is saved there.
    gated.release();
    await expect.poll(() => runStatus(runId), { timeout: 10_000 }).toBe("completed");
    expect(session.getSnapshot().stop).toMatchObject({ status: "unconfirmed", outcome: null });

    network.restore();
    const reply = await stopping;
    expect(reply).toMatchObject({ status: "completed", already_terminal: true });
    const answered = await waitForSnapshot(session, (snapshot) => snapshot.history.some((message) => message.role === "assistant"));
    expect(answered.stop).toMatchObject({ status: "confirmed", outcome: "completed" });
    expect(answered.run.status).toBe("completed");
    expect(answered.draft).toBeNull();
    expect(answered.resumePoint).toBeNull();
    expect(answered.actions).toMatchObject({ canContinue: false, canSaveWhatISaw: false, canSend: true });
    const saved = (await client.getHistory(answered.threadId!)).messages;
    expect(answered.history.map((message) => message.content)).toEqual(saved.map((message) => message.content));
    expect(saved.at(-1)!.content).toBe("The tide turns because the moon pulls the sea, and the earth turns beneath it.");
  });

  it("close() abandons a Stop that has not reached the server: stop() rejects with session_closed", async () => {
    const network = createNetworkSwitch();
    const session = newSession(createTidemarkClient({ baseUrl: h.url, fetch: network.fetch }));
    await session.send("Why do tides turn?");
    const runId = (await waitForSnapshot(session, hasDraft)).run.runId!;
    network.cut();
    const stopping = session.stop();
    await waitForSnapshot(session, (snapshot) => snapshot.stop?.status === "unconfirmed");
    session.close();
    expect(await rejection(stopping)).toMatchObject({ code: "session_closed" });
    network.restore();
    await client.cancelRun(runId, { waitMs: 5_000 });
  });
});
