import { describe, expect, it } from "vitest";
import { createRunId } from "./create-run-id.js";

describe("createRunId", () => {
  it("makes ids the server accepts as a client-named run_id, sortable by time", () => {
    const ids = [createRunId(1_700_000_000_000), createRunId(1_700_000_000_001), createRunId(1_800_000_000_000)];
    for (const id of ids) expect(id).toMatch(/^run_[0-9a-z]{26}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(Array.from({ length: 1000 }, () => createRunId())).size).toBe(1000);
  });
});
