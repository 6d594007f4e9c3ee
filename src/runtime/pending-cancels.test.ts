/** A Stop for a client-named run that does not exist yet is remembered briefly, then applied once. */
import { describe, expect, it } from "vitest";
import { PendingCancels } from "./pending-cancels.js";

const T0 = 1_700_000_000_000;

describe("PendingCancels", () => {
  it("hands a remembered cancel's reason to the first take, and only once", () => {
    const pending = new PendingCancels();
    pending.remember("t1", "run_a", "user_pressed_stop", T0);

    expect(pending.take("t1", "run_a", T0 + 5)).toBe("user_pressed_stop");
    expect(pending.take("t1", "run_a", T0 + 6)).toBeUndefined();
  });

  it("knows nothing of runs it was never told about", () => {
    expect(new PendingCancels().take("t1", "run_unknown", T0)).toBeUndefined();
  });

  it("scopes entries by tenant", () => {
    const pending = new PendingCancels();
    pending.remember("tenant_a", "run_same", "stop", T0);

    expect(pending.take("tenant_b", "run_same", T0)).toBeUndefined();
    expect(pending.take("tenant_a", "run_same", T0)).toBe("stop");
  });

  it("keeps an entry up to its TTL and drops it after", () => {
    const pending = new PendingCancels({ ttlMs: 1_000 });
    pending.remember("t1", "run_on_time", "stop", T0);
    pending.remember("t1", "run_late", "stop", T0);

    expect(pending.take("t1", "run_on_time", T0 + 1_000)).toBe("stop");
    expect(pending.take("t1", "run_late", T0 + 1_001)).toBeUndefined();
    // An expired entry is removed by the take that found it too late.
    expect(pending.take("t1", "run_late", T0)).toBeUndefined();
  });

  it("defaults to a TTL of one minute", () => {
    const pending = new PendingCancels();
    pending.remember("t1", "run_a", "stop", T0);
    pending.remember("t1", "run_b", "stop", T0);

    expect(pending.take("t1", "run_a", T0 + 60_000)).toBe("stop");
    expect(pending.take("t1", "run_b", T0 + 60_001)).toBeUndefined();
  });

  it("prunes expired entries when a new one is remembered", () => {
    const pending = new PendingCancels({ ttlMs: 1_000, maxEntries: 2 });
    pending.remember("t1", "run_old", "stop", T0);
    pending.remember("t1", "run_fresh", "stop", T0 + 900);

    // run_old has expired, so it makes room without evicting run_fresh.
    pending.remember("t1", "run_new", "stop", T0 + 1_500);

    expect(pending.take("t1", "run_fresh", T0 + 1_500)).toBe("stop");
    expect(pending.take("t1", "run_new", T0 + 1_500)).toBe("stop");
  });

  it("is bounded: the oldest entry makes room for a new one", () => {
    const pending = new PendingCancels({ maxEntries: 3 });
    for (const runId of ["run_1", "run_2", "run_3", "run_4"]) pending.remember("t1", runId, `stop ${runId}`, T0);

    expect(pending.take("t1", "run_1", T0)).toBeUndefined();
    expect(pending.take("t1", "run_2", T0)).toBe("stop run_2");
    expect(pending.take("t1", "run_3", T0)).toBe("stop run_3");
    expect(pending.take("t1", "run_4", T0)).toBe("stop run_4");
  });

  it("treats a repeated Stop as the newest entry, with a fresh TTL", () => {
    const pending = new PendingCancels({ ttlMs: 1_000, maxEntries: 3 });
    pending.remember("t1", "run_a", "stop", T0);
    pending.remember("t1", "run_b", "stop", T0 + 100);
    pending.remember("t1", "run_a", "stop again", T0 + 200);
    pending.remember("t1", "run_c", "stop", T0 + 300);

    // At the bound, the entry remembered longest ago (run_b) makes room, not the refreshed one.
    pending.remember("t1", "run_d", "stop", T0 + 400);

    expect(pending.take("t1", "run_b", T0 + 400)).toBeUndefined();
    expect(pending.take("t1", "run_a", T0 + 1_200)).toBe("stop again");
    expect(pending.take("t1", "run_c", T0 + 1_300)).toBe("stop");
    expect(pending.take("t1", "run_d", T0 + 1_400)).toBe("stop");
  });
});
