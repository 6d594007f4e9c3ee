/** Fork over HTTP (DESIGN §9, race 3 of §16): a branch shares the history up to a checkpoint, and both paths continue. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STOPPED_RESPONSE_NOTE } from "../src/runtime/execute-run.js";
import { createDemoModel, type ChatModel, type ModelRequest } from "../src/runtime/index.js";
import { startHarness, type Harness } from "./support/harness.js";

/** The demo model, recording every request it is sent. */
function recordingModel(): { model: ChatModel; requests: ModelRequest[] } {
  const demo = createDemoModel({ wordsPerSecond: 400, wordCount: 300 });
  const requests: ModelRequest[] = [];
  return {
    requests,
    model: {
      id: "demo",
      title: demo.title,
      stream(request, options) {
        requests.push(request);
        return demo.stream(request, options);
      },
    },
  };
}

const said = (messages: any[]) => messages.map((message) => `${message.role}: ${message.role === "user" ? message.content : "…"}`);

describe("fork", () => {
  const recorder = recordingModel();
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ model: recorder.model });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  async function stopMidStream(content = "Tell me a long story") {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, content);
    await h.events(run.run_id, { until: (event) => event.type === "message.delta" && event.seq >= 5 });
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST" });
    expect(cancel.body.status).toBe("cancelled");
    return { threadId, cancel: cancel.body };
  }

  const history = async (threadId: string, query = "") => (await h.api(`/v1/threads/${threadId}/history${query}`)).body;
  const fork = (threadId: string, body: unknown) => h.api(`/v1/threads/${threadId}/fork`, { method: "POST", json: body });

  async function runToEnd(threadId: string, content: string, extra: Record<string, unknown> = {}) {
    const run = await h.startRun(threadId, content, extra);
    const events = await h.events(run.run_id);
    expect(events.at(-1)!.type).toBe("run.completed");
    return run;
  }

  it("after a Stop, forks from the cancel checkpoint; both branches continue with runs and read the shared prefix", async () => {
    const { threadId, cancel } = await stopMidStream();
    const prefix = await history(threadId);

    const forked = await fork(threadId, { from_checkpoint_id: cancel.resume_checkpoint_id, metadata: { label: "try again" } });
    expect(forked.status).toBe(201);
    const branch = forked.body;
    expect(branch).toMatchObject({
      state_version: cancel.accepted_state_version + 1,
      status: "idle",
      forked_from: { thread_id: threadId, checkpoint_id: cancel.resume_checkpoint_id, state_version: cancel.accepted_state_version },
      metadata: { label: "try again", forked_from: { thread_id: threadId, checkpoint_id: cancel.resume_checkpoint_id } },
      stats: { message_count: 0, llm_call_count: 0 },
      history_url: `/v1/threads/${branch.thread_id}/history`,
    });
    expect(branch.thread_id).not.toBe(threadId);
    expect((await h.api(`/v1/threads/${branch.thread_id}`)).body.forked_from.checkpoint_id).toBe(cancel.resume_checkpoint_id);

    // The branch continues; the model sees the shared prefix.
    const before = recorder.requests.length;
    await runToEnd(branch.thread_id, "branch question", { expected_state_version: branch.state_version });
    expect(recorder.requests[before]!.messages.filter((message) => message.role === "user").map((message) => message.content)).toEqual([
      "Tell me a long story",
      "branch question",
    ]);
    // The source is unchanged by the branch's run.
    expect(await history(threadId)).toEqual(prefix);

    // The source continues from the same checkpoint on its own path.
    await runToEnd(threadId, "source question", {
      resume_from_checkpoint_id: cancel.resume_checkpoint_id,
      expected_state_version: cancel.accepted_state_version,
    });

    const branchHistory = await history(branch.thread_id);
    const sourceHistory = await history(threadId);
    expect(said(branchHistory.messages)).toEqual(["user: Tell me a long story", "user: branch question", "assistant: …"]);
    expect(said(sourceHistory.messages)).toEqual(["user: Tell me a long story", "user: source question", "assistant: …"]);
    // The prefix is the same rows, read through the fork point; positions continue after it.
    expect(branchHistory.messages[0]).toEqual(sourceHistory.messages[0]);
    expect(branchHistory.messages.map((message: any) => message.position)).toEqual([0, 1, 2]);
    // The interrupted response of the prefix is marked on both paths.
    expect(branchHistory.markers).toEqual([expect.objectContaining({ type: "interrupted_response", checkpoint_id: cancel.resume_checkpoint_id })]);

    // Checkpoints chain through the fork point, one version each.
    const checkpoints = (await h.api(`/v1/threads/${branch.thread_id}/checkpoints`)).body.checkpoints;
    expect(checkpoints.map((checkpoint: any) => checkpoint.state_version)).toEqual(checkpoints.map((_: unknown, index: number) => index + 1));
    const forkCreated = checkpoints.find((checkpoint: any) => checkpoint.kind === "fork_created");
    expect(forkCreated.parent_checkpoint_id).toBe(cancel.resume_checkpoint_id);
    expect(branchHistory.state_version).toBe(checkpoints.at(-1).state_version);

    // The last page only.
    const page = await history(branch.thread_id, "?limit=2");
    expect(page.messages).toEqual(branchHistory.messages.slice(-2));
    expect(page.has_earlier).toBe(true);
    expect((await history(branch.thread_id, "?limit=50")).has_earlier).toBe(false);

    // The branch's own statistics: its run only.
    const branchThread = (await h.api(`/v1/threads/${branch.thread_id}`)).body;
    expect(branchThread.stats).toMatchObject({ message_count: 2, llm_call_count: 1 });
  });

  it("race 3: two tabs resume one checkpoint; the loser gets the conflict with a fork, forks there and continues on the branch", async () => {
    const { threadId, cancel } = await stopMidStream();
    const resume = (content: string) =>
      h.api(`/v1/threads/${threadId}/runs`, {
        method: "POST",
        json: {
          input: { role: "user", content },
          resume_from_checkpoint_id: cancel.resume_checkpoint_id,
          expected_state_version: cancel.accepted_state_version,
        },
      });
    const [a, b] = await Promise.all([resume("tab A"), resume("tab B")]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    const [winner, loser, loserText] = a.status === 201 ? [a, b, "tab B"] : [b, a, "tab A"];
    expect(loser.body.error).toBe("state_version_conflict");
    expect(loser.body.allowed_actions).toEqual(expect.arrayContaining(["reload", `fork_from_${cancel.resume_checkpoint_id}`]));
    await h.events(winner.body.run_id);

    // The loser takes the offered action: a branch from the checkpoint it had.
    const forked = await fork(threadId, { from_checkpoint_id: cancel.resume_checkpoint_id });
    expect(forked.status).toBe(201);
    await runToEnd(forked.body.thread_id, loserText, { expected_state_version: forked.body.state_version });

    const inputs = async (id: string) =>
      (await history(id)).messages.filter((message: any) => message.role === "user").map((message: any) => message.content);
    const winnerText = loserText === "tab A" ? "tab B" : "tab A";
    // Both stories are kept, each on its own path, never mixed.
    expect(await inputs(threadId)).toEqual(["Tell me a long story", winnerText]);
    expect(await inputs(forked.body.thread_id)).toEqual(["Tell me a long story", loserText]);
  });

  it("forks a fork, and forks from an older checkpoint", async () => {
    const threadId = await h.createThread();
    await runToEnd(threadId, "one");
    const older = (await h.api(`/v1/threads/${threadId}`)).body.head_checkpoint_id;
    await runToEnd(threadId, "two");

    const first = (await fork(threadId, { from_checkpoint_id: older })).body;
    await runToEnd(first.thread_id, "first branch");
    const second = (await fork(first.thread_id, { from_checkpoint_id: first.head_checkpoint_id })).body;
    expect(second.state_version).toBe(first.state_version + 1);
    await runToEnd(second.thread_id, "second branch");

    const users = async (id: string) =>
      (await history(id)).messages.filter((message: any) => message.role === "user").map((message: any) => message.content);
    expect(await users(threadId)).toEqual(["one", "two"]);
    expect(await users(first.thread_id)).toEqual(["one", "first branch"]);
    // second was forked from first's fork_created checkpoint: it shares "one" only, then goes its own way.
    expect(await users(second.thread_id)).toEqual(["one", "second branch"]);
    expect(second.forked_from).toMatchObject({ thread_id: first.thread_id, checkpoint_id: first.head_checkpoint_id });
    // A fork of first's newest checkpoint shares first's run too.
    const firstHead = (await h.api(`/v1/threads/${first.thread_id}`)).body.head_checkpoint_id;
    const third = (await fork(first.thread_id, { from_checkpoint_id: firstHead })).body;
    await runToEnd(third.thread_id, "third branch");
    expect(await users(third.thread_id)).toEqual(["one", "first branch", "third branch"]);
    expect(await users(first.thread_id)).toEqual(["one", "first branch"]);
  });

  it("a Continue twenty forks after a Stop still builds on it: the stopped step runs again, the model told it was stopped", async () => {
    // A run reads only its thread's last checkpoints to find the Stop it builds on; twenty
    // fork_created checkpoints put this one further back, so the whole lineage is read.
    const { threadId, cancel } = await stopMidStream("Tell me a long story about forks");
    let branch = (await fork(threadId, { from_checkpoint_id: cancel.resume_checkpoint_id })).body;
    for (let forks = 1; forks < 20; forks++) branch = (await fork(branch.thread_id, { from_checkpoint_id: branch.head_checkpoint_id })).body;
    expect(branch.state_version).toBe(cancel.accepted_state_version + 20);

    const before = recorder.requests.length;
    const resumed = await h.api(`/v1/threads/${branch.thread_id}/runs`, {
      method: "POST",
      json: { resume_from_checkpoint_id: branch.head_checkpoint_id, expected_state_version: branch.state_version },
    });
    expect(resumed.status).toBe(201);
    expect(resumed.body).toMatchObject({ input_message_id: null, base_checkpoint_id: branch.head_checkpoint_id });
    expect((await h.events(resumed.body.run_id)).at(-1)!.type).toBe("run.completed");
    expect(recorder.requests[before]!.messages).toEqual([
      { role: "system", content: STOPPED_RESPONSE_NOTE },
      { role: "user", content: "Tell me a long story about forks" },
    ]);
  });

  it("answers 404 for an unknown thread or a checkpoint outside the lineage, 400 for a bad body", async () => {
    const threadId = await h.createThread();
    const other = await h.createThread();
    const otherHead = (await h.api(`/v1/threads/${other}`)).body.head_checkpoint_id;
    const head = (await h.api(`/v1/threads/${threadId}`)).body.head_checkpoint_id;

    const unknown = await fork("thr_01jd8x0f1ae2rbv7c9ks0d8m5q", { from_checkpoint_id: head });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe("thread_not_found");
    const outside = await fork(threadId, { from_checkpoint_id: otherHead });
    expect(outside.status).toBe(404);
    expect(outside.body.error).toBe("checkpoint_not_found");
    for (const body of [{}, { from_checkpoint_id: "" }, { from_checkpoint_id: head, extra: 1 }, { from_checkpoint_id: 7 }]) {
      const bad = await fork(threadId, body);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe("invalid_request");
    }
    expect((await h.api(`/v1/threads/${threadId}/history?limit=0`)).status).toBe(400);
  });
});
