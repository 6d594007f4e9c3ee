import { describe, expect, it } from "vitest";
import { resumePointFromCheckpoints, resumePointFromHistory, type ReloadedThread } from "./resume-point.js";
import type { CheckpointView, HistoryMarker, MessageView } from "./wire-types.js";

const checkpoint = (id: string, parent: string | null, kind: CheckpointView["kind"], version: number, pending = false): CheckpointView =>
  ({ checkpoint_id: id, parent_checkpoint_id: parent, kind, state_version: version, pending_step: pending ? { step_id: "s", kind: "model", input_hash: "h" } : null }) as CheckpointView;
const interrupted = (id: string, version: number): HistoryMarker => ({
  type: "interrupted_response",
  label: "previous response was interrupted",
  run_id: "run_a",
  checkpoint_id: id,
  state_version: version,
  discarded_stream_chars: 10,
});
const message = (id: string, checkpointId: string, status: MessageView["publication_status"] = "published") =>
  ({ message_id: id, checkpoint_id: checkpointId, publication_status: status }) as MessageView;

const thread = (fields: Partial<ReloadedThread>): ReloadedThread => ({
  headCheckpointId: "cp_3",
  stateVersion: 3,
  history: [message("msg_user", "cp_2")],
  markers: [interrupted("cp_3", 3)],
  resumePoint: null,
  ...fields,
});

describe("the resume point after a reload", () => {
  it("is the Stop's checkpoint while it is the head", () => {
    expect(resumePointFromHistory(thread({}))).toEqual({ checkpointId: "cp_3", stateVersion: 3 });
  });

  it("is none when a message came after the Stop, or nothing was ever stopped", () => {
    expect(resumePointFromHistory(thread({ headCheckpointId: "cp_4", stateVersion: 4, history: [message("msg_user", "cp_2"), message("msg_next", "cp_4")] }))).toBeNull();
    expect(resumePointFromHistory(thread({ markers: [] }))).toBeNull();
  });

  it("cannot be told from history when the head is a fragment, a deletion or a branch point", () => {
    const afterFragment = thread({ headCheckpointId: "cp_4", stateVersion: 4, history: [message("msg_user", "cp_2"), message("msg_frag", "cp_4", "fragment")] });
    expect(resumePointFromHistory(afterFragment)).toBeUndefined();
    expect(resumePointFromHistory(thread({ headCheckpointId: "cp_5", stateVersion: 5 }))).toBeUndefined();
  });

  it("walks back past fragments, deletions and branch points to a Stop that caught a step", () => {
    const chain = [
      checkpoint("cp_1", null, "thread_created", 1),
      checkpoint("cp_2", "cp_1", "input_accepted", 2),
      checkpoint("cp_3", "cp_2", "cancel_accepted", 3, true),
      checkpoint("cp_4", "cp_3", "fragment_saved", 4),
      checkpoint("cp_5", "cp_4", "message_deleted", 5),
      checkpoint("cp_6", "cp_5", "fork_created", 6),
    ];
    expect(resumePointFromCheckpoints(chain, "cp_6", 6)).toEqual({ checkpointId: "cp_6", stateVersion: 6 });
    expect(resumePointFromCheckpoints(chain, "cp_4", 4)).toEqual({ checkpointId: "cp_4", stateVersion: 4 });
    expect(resumePointFromCheckpoints(chain, "cp_2", 2)).toBeNull();
    // A cancel of a run that never started interrupted nothing.
    const idle = [checkpoint("cp_1", null, "thread_created", 1), checkpoint("cp_2", "cp_1", "cancel_accepted", 2), checkpoint("cp_3", "cp_2", "fragment_saved", 3)];
    expect(resumePointFromCheckpoints(idle, "cp_3", 3)).toBeNull();
  });
});
