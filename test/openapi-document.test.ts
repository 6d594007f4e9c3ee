/**
 * The OpenAPI document names every operation for generated clients: a stable camelCase
 * operationId, a tag by resource, and the bearer API key where keys apply (issue 11, cosmetic).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "./support/harness.js";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
}

const OPERATION_IDS: Record<string, string> = {
  "POST /v1/threads": "createThread",
  "GET /v1/threads": "listThreads",
  "GET /v1/threads/{thread_id}": "getThread",
  "DELETE /v1/threads/{thread_id}": "deleteThread",
  "GET /v1/threads/{thread_id}/history": "getThreadHistory",
  "GET /v1/threads/{thread_id}/checkpoints": "listThreadCheckpoints",
  "POST /v1/threads/{thread_id}/fork": "forkThread",
  "POST /v1/threads/{thread_id}/runs": "createRun",
  "POST /v1/runs": "createRunInNewThread",
  "GET /v1/runs/{run_id}": "getRun",
  "GET /v1/runs/{run_id}/events": "streamRunEvents",
  "POST /v1/runs/{run_id}/cancel": "cancelRun",
  "POST /v1/runs/{run_id}/approve": "approveRun",
  "POST /v1/runs/{run_id}/reject": "rejectRun",
  "GET /v1/threads/{thread_id}/operations": "listOperations",
  "POST /v1/threads/{thread_id}/operations/{op_id}/confirm": "confirmOperation",
  "POST /v1/runs/{run_id}/fragments": "saveFragment",
  "DELETE /v1/threads/{thread_id}/messages/{message_id}": "deleteMessage",
  "GET /healthz": "getHealth",
  "GET /metrics": "getMetrics",
};

describe("GET /v1/openapi.json", () => {
  let h: Harness;
  let document: {
    tags: { name: string }[];
    security: Record<string, string[]>[];
    components: { securitySchemes: Record<string, { type: string; scheme: string }> };
    paths: Record<string, Record<string, Operation>>;
  };
  let operations: { route: string; operation: Operation }[];
  beforeAll(async () => {
    h = await startHarness({ apiKeys: new Map([["key-a", "tenant-a"]]) });
    const response = await h.api("/v1/openapi.json", { key: "key-a" });
    expect(response.status).toBe(200);
    document = response.body;
    operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, operation })),
    );
  });
  afterAll(async () => {
    await h.close();
  });

  it("gives every operation a unique camelCase operationId", () => {
    const ids = operations.map(({ route, operation }) => {
      expect(operation.operationId, route).toMatch(/^[a-z][a-zA-Z]+$/);
      return operation.operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("keeps the operationIds clients were generated with", () => {
    const found = Object.fromEntries(operations.map(({ route, operation }) => [route, operation.operationId]));
    // Routes added later get their own; these never change, or a generated client's method names would.
    for (const [route, operationId] of Object.entries(OPERATION_IDS)) expect(found[route], route).toBe(operationId);
  });

  it("writes every pattern as a JSON Schema regex a generated client can compile (no flags baked in)", () => {
    const patterns = [...JSON.stringify(document).matchAll(/"pattern":("(?:[^"\\]|\\.)*")/g)].map((match) => JSON.parse(match[1]!) as string);
    expect(patterns.length).toBeGreaterThan(0);
    for (const pattern of patterns) {
      expect(pattern, pattern).not.toMatch(/\/[a-z]*$/);
      expect(() => new RegExp(pattern, "u"), pattern).not.toThrow();
    }
    // The title's: control characters refused, everything else allowed.
    expect(patterns).toContain("^[^\\p{Cc}]*$");
  });

  it("tags every operation with one declared resource", () => {
    const declared = document.tags.map((tag) => tag.name);
    expect(declared).toEqual(["threads", "runs", "messages", "operations", "agents", "system"]);
    for (const { route, operation } of operations) {
      expect(operation.tags, route).toHaveLength(1);
      expect(declared, route).toContain(operation.tags![0]);
    }
    const tagOf = (route: string) => operations.find((entry) => entry.route === route)?.operation.tags?.[0];
    expect(tagOf("POST /v1/threads")).toBe("threads");
    expect(tagOf("POST /v1/threads/{thread_id}/runs")).toBe("runs");
    expect(tagOf("POST /v1/runs/{run_id}/fragments")).toBe("messages");
    expect(tagOf("POST /v1/runs/{run_id}/approve")).toBe("operations");
    expect(tagOf("GET /healthz")).toBe("system");
    expect(tagOf("GET /v1/agents")).toBe("agents");
    expect(tagOf("GET /v1/runs/{run_id}/steps")).toBe("runs");
  });

  it("declares the API key as a bearer scheme, required by every /v1 operation and by no system one", async () => {
    expect(document.components.securitySchemes).toEqual({ apiKey: expect.objectContaining({ type: "http", scheme: "bearer" }) });
    expect(document.security).toEqual([{ apiKey: [] }]);
    for (const { route, operation } of operations) {
      const security = operation.security ?? document.security;
      if (route.split(" ")[1]!.startsWith("/v1/")) expect(security, route).toEqual([{ apiKey: [] }]);
      else expect(security, route).toEqual([]);
    }
    // What the document says is what the server does.
    expect((await h.api("/v1/threads")).status).toBe(401);
    expect((await h.api("/healthz")).status).toBe(200);
    expect((await h.api("/metrics")).status).toBe(200);
  });
});
