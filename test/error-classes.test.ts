/**
 * The error classes (STYLE §6, issue 13 item 5): each has a stable `name`, typed fields, and an
 * `isInstance` that recognises it by its brand, so that a copy of the class from a second copy of
 * the module (two installed versions, a bundler's duplicate) is recognised where `instanceof` fails.
 */
import { describe, expect, it, vi } from "vitest";
import { ConfigurationError, InvariantError, ModelError, TidemarkError } from "../src/core/index.js";
import {
  CancelRequestedError,
  ModelFailedError,
  PlanDefinitionError,
  PublicationRejectedError,
  RunNotRunningError,
  ShieldTimeoutError,
  StoreInvariantError,
  StoreSchemaError,
} from "../src/index.js";

/** One of each, as the product makes them, with the name it must keep and a field it must carry. */
const CASES = [
  { make: () => new InvariantError("broken"), name: "InvariantError", fields: {} },
  { make: () => new ConfigurationError("bad", { setting: "--model" }), name: "ConfigurationError", fields: { setting: "--model" } },
  { make: () => new ModelFailedError(new Error("upstream")), name: "ModelFailedError", fields: { message: "the model failed" } },
  { make: () => new PublicationRejectedError("run_1"), name: "PublicationRejectedError", fields: { runId: "run_1" } },
  // An abort reason on purpose: code everywhere tells an abort by this name.
  { make: () => new CancelRequestedError("user_stop"), name: "AbortError", fields: { reason: "user_stop" } },
  { make: () => new ShieldTimeoutError(50), name: "ShieldTimeoutError", fields: { timeoutMs: 50 } },
  { make: () => new PlanDefinitionError("step-a", "duplicate"), name: "PlanDefinitionError", fields: { stepId: "step-a" } },
  { make: () => new RunNotRunningError("run_1", "stopped", "cancelling"), name: "RunNotRunningError", fields: { runId: "run_1", runStatus: "cancelling" } },
  {
    make: () => new StoreInvariantError("compare_and_set_failed", "thr_1", "cas"),
    name: "StoreInvariantError",
    fields: { invariant: "compare_and_set_failed", subjectId: "thr_1" },
  },
  { make: () => new StoreSchemaError("newer_version", "/tmp/x.db", "newer"), name: "StoreSchemaError", fields: { problem: "newer_version", location: "/tmp/x.db" } },
] as const;

const CLASSES = [
  InvariantError,
  ConfigurationError,
  ModelFailedError,
  PublicationRejectedError,
  CancelRequestedError,
  ShieldTimeoutError,
  PlanDefinitionError,
  RunNotRunningError,
  StoreInvariantError,
  StoreSchemaError,
] as const;

describe("error classes", () => {
  it.each(CASES.map((entry, index) => ({ ...entry, index })))("$name keeps its name and fields, and isInstance knows it", ({ make, name, fields, index }) => {
    const error = make();
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe(name);
    expect(error).toMatchObject(fields);
    expect(CLASSES[index]!.isInstance(error)).toBe(true);
  });

  it("isInstance says no to every other class, to plain errors and to non-objects", () => {
    CASES.forEach(({ make }, index) => {
      const error = make();
      CLASSES.forEach((other, otherIndex) => {
        // A store error is also its base kind; nothing else is anything else.
        const isKind =
          otherIndex === index ||
          (other === InvariantError && StoreInvariantError.isInstance(error)) ||
          (other === ConfigurationError && StoreSchemaError.isInstance(error));
        expect(other.isInstance(error)).toBe(isKind);
      });
    });
    for (const other of [...CLASSES, ModelError, TidemarkError]) {
      expect(other.isInstance(new Error("plain"))).toBe(false);
      expect(other.isInstance({ name: "ModelFailedError" })).toBe(false);
      expect(other.isInstance(undefined)).toBe(false);
      expect(other.isInstance("ModelFailedError")).toBe(false);
    }
  });

  it("isInstance recognises an error made by a second copy of its module, where instanceof does not", async () => {
    vi.resetModules();
    const copy = await import("../src/index.js");
    const copies = [
      new copy.ModelFailedError(new Error("upstream")),
      new copy.PublicationRejectedError("run_1"),
      new copy.CancelRequestedError("user_stop"),
      new copy.ShieldTimeoutError(50),
      new copy.PlanDefinitionError("step-a", "duplicate"),
      new copy.RunNotRunningError("run_1", "stopped"),
      new copy.StoreInvariantError("broken_lineage", "thr_1", "cycle"),
      new copy.StoreSchemaError("missing", "/nowhere", "no file"),
      new copy.InvariantError("broken"),
      new copy.ConfigurationError("bad"),
    ];
    const originals = [
      ModelFailedError,
      PublicationRejectedError,
      CancelRequestedError,
      ShieldTimeoutError,
      PlanDefinitionError,
      RunNotRunningError,
      StoreInvariantError,
      StoreSchemaError,
      InvariantError,
      ConfigurationError,
    ] as const;
    copies.forEach((error, index) => {
      const original = originals[index]!;
      expect(error).not.toBeInstanceOf(original);
      expect(original.isInstance(error)).toBe(true);
    });
  });
});
