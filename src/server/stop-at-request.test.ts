/** The server's request listener for a Stop: which requests it takes, and a failure kept out of the process. */
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import type { Logger, Runtime } from "../runtime/index.js";
import { silentLogger } from "../runtime/index.js";
import { createStopAtHeaders } from "./stop-at-request.js";

const RUN_ID = "run_01jd8x0f1ae2rbv7c9ks0d8m5q";

/** A runtime that records the Stops asked of it, or fails them. */
function stopRecorder(fails = false) {
  const asked: string[] = [];
  const runtime = {
    stopAtRequest(tenantId: string, runId: string) {
      asked.push(`${tenantId}/${runId}`);
      if (fails) throw new Error("the runtime is gone");
      return false;
    },
    recordStopAtRequest: async () => undefined,
  } as unknown as Runtime;
  return { runtime, asked };
}

const request = (method: string, url: string, authorization?: string) => ({ method, url, headers: authorization ? { authorization } : {} }) as IncomingMessage;
const response = () => new EventEmitter() as unknown as ServerResponse;

describe("createStopAtHeaders", () => {
  it("asks the runtime only for a POST to a well-formed run's cancel path, with the key's tenant", () => {
    const { runtime, asked } = stopRecorder();
    const listener = createStopAtHeaders(runtime, new Map([["key-a", "tenant-a"]]), silentLogger);
    listener(request("POST", `/v1/runs/${RUN_ID}/cancel`, "Bearer key-a"), response());
    listener(request("POST", `/v1/runs/${RUN_ID}/cancel?wait=1`, "Bearer key-a"), response());
    listener(request("GET", `/v1/runs/${RUN_ID}/cancel`, "Bearer key-a"), response());
    listener(request("POST", `/v1/runs/${RUN_ID}/cancel/`, "Bearer key-a"), response());
    listener(request("POST", `/v1/runs/garbage/cancel`, "Bearer key-a"), response());
    listener(request("POST", `/v1/runs/${RUN_ID}/cancel`, "Bearer nope"), response());
    listener(request("POST", `/v1/runs/${RUN_ID}/cancel`), response());
    listener(request("POST", `/v1/runs/${RUN_ID}`, "Bearer key-a"), response());
    expect(asked).toEqual([`tenant-a/${RUN_ID}`, `tenant-a/${RUN_ID}`]);
  });

  it("a runtime that throws is logged, never thrown into Node's request event: the app then takes the request", () => {
    const { runtime, asked } = stopRecorder(true);
    const errors: string[] = [];
    const logger: Logger = { ...silentLogger, error: (_fields, message) => void errors.push(message) };
    const listener = createStopAtHeaders(runtime, new Map(), logger);
    expect(() => listener(request("POST", `/v1/runs/${RUN_ID}/cancel`), response())).not.toThrow();
    expect(asked).toHaveLength(1);
    expect(errors).toEqual(["a Stop could not be taken at its request's headers"]);
  });
});
