/**
 * The client's hand-written wire types must stay the server's shapes: checked by the compiler
 * (`tsc` type-checks tests), so a field renamed on one side fails the build.
 */
import { describe, expectTypeOf, it } from "vitest";
import type { agentView, checkpointView, historyMarkers, messageView, operationView, runView, statsView, stepView, threadView } from "../server/wire.js";
import type { AgentView, CheckpointView, HistoryMarker, MessageView, OperationView, RunView, StatsView, StepView, ThreadView } from "./wire-types.js";

describe("the client's wire types", () => {
  it("are what the server sends", () => {
    expectTypeOf<ReturnType<typeof statsView>>().toEqualTypeOf<StatsView>();
    expectTypeOf<ReturnType<typeof threadView>>().toExtend<ThreadView>();
    expectTypeOf<ThreadView>().toExtend<ReturnType<typeof threadView> & { history_url?: string }>();
    expectTypeOf<ReturnType<typeof runView>>().toExtend<RunView>();
    expectTypeOf<RunView>().toExtend<ReturnType<typeof runView>>();
    expectTypeOf<ReturnType<typeof messageView>>().toExtend<MessageView>();
    expectTypeOf<ReturnType<typeof checkpointView>>().toExtend<CheckpointView>();
    expectTypeOf<CheckpointView>().toExtend<ReturnType<typeof checkpointView>>();
    expectTypeOf<ReturnType<typeof operationView>>().toExtend<OperationView>();
    expectTypeOf<OperationView>().toExtend<ReturnType<typeof operationView>>();
    expectTypeOf<ReturnType<typeof historyMarkers>[number]>().toExtend<HistoryMarker>();
    expectTypeOf<ReturnType<typeof stepView>>().toExtend<StepView>();
    expectTypeOf<StepView>().toExtend<ReturnType<typeof stepView>>();
    expectTypeOf<ReturnType<typeof agentView>>().toExtend<AgentView>();
  });
});
