import { afterEach, describe, expect, it, vi } from "vitest";
import { createJsonLogger, runLogFields } from "./logger.js";

describe("createJsonLogger", () => {
  afterEach(() => vi.restoreAllMocks());

  it("writes one JSON line whose own fields an entry's fields never overwrite", () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => (written.push(String(chunk)), true));
    createJsonLogger().warn({ ...runLogFields({ runId: "run_1", threadId: "thr_1", tenantId: "t1" }), message: "from the entry", level: "x" }, "run failed");
    expect(written).toHaveLength(1);
    expect(written[0]!.endsWith("\n")).toBe(true);
    expect(JSON.parse(written[0]!)).toMatchObject({ level: "warn", message: "run failed", run_id: "run_1", thread_id: "thr_1", tenant_id: "t1" });
  });
});
