import { join } from "node:path";
import { createOpenAICompatibleModel, withRetries } from "../src/models/index.js";
import { silentLogger, type ChatModel } from "../src/runtime/index.js";
import { LOCAL_TENANT } from "../src/server/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { absoluteNow } from "./absolute-clock.js";
import { dropBenchSchema, newBenchSchemaName, withBenchDatabase } from "./bench-database.js";
import { createTempDir, requestJson } from "./bench-support.js";
import type { PlanProvider } from "./plan-provider.js";
import { MARKER_PATTERN, type Deployment } from "./plan-stop-sample.js";
import { startServe, stopAndReport, type ChildReport, type ServeChild } from "./serve-child.js";

/*
 * The two Tidemarks plan-stop stops plans on: the embedded product in the bench process
 * (SQLite), and an API process + a worker process of `tidemark serve` on one PostgreSQL schema.
 */

const MODEL = "bench";

/** A deployment while it runs, and what it can say once the runs are over. */
export interface OpenDeployment {
  deployment: Deployment;
  /** Cluster only: when the worker emitted each run's `run.cancel_requested` (run_events.at, Date.now(), whole ms). */
  workerCancelEventTimes?(): Promise<Map<string, number>>;
  /** Stops it; the child processes' reports (cluster). */
  close(): Promise<ChildReport[]>;
}

/**
 * Wraps a model so that each generation whose last user message carries a run's marker stamps
 * absoluteNow() when its signal aborts; the listener is added before the model's own, so it is
 * the moment of the abort, before the provider cancel call and the fetch's abort run.
 */
function withAbortProbe(inner: ChatModel): { model: ChatModel; abortTimes(marker: string): number[] } {
  const aborts = new Map<string, number[]>();
  const model: ChatModel = {
    id: inner.id,
    stream(request, options) {
      const lastUser = request.messages.findLast((message) => message.role === "user");
      const marker = MARKER_PATTERN.exec(typeof lastUser?.content === "string" ? lastUser.content : "")?.[0];
      if (marker !== undefined) {
        options.signal.addEventListener("abort", () => aborts.set(marker, [...(aborts.get(marker) ?? []), absoluteNow()]), { once: true });
      }
      return inner.stream(request, options);
    },
    title: (message, options) => inner.title?.(message, options) ?? Promise.resolve("bench"),
  };
  return {
    model,
    abortTimes(marker) {
      const times = aborts.get(marker) ?? [];
      aborts.delete(marker);
      return times;
    },
  };
}

/** The embedded product in this process: startTidemark on SQLite, the lean reader with the explicit cancel call. */
export async function openEmbedded(provider: PlanProvider): Promise<OpenDeployment> {
  const temp = createTempDir("plan-stop");
  const probe = withAbortProbe(withRetries(createOpenAICompatibleModel({ model: MODEL, baseURL: provider.url, cancel: { url: provider.cancelUrl } })));
  const tidemark = await startTidemark({ dbPath: join(temp.dir, "plan-stop.db"), port: 0, model: probe.model, logger: silentLogger });
  return {
    deployment: {
      name: "embedded (SQLite)",
      url: tidemark.url,
      terminalStatus: async (runId) => (await tidemark.runtime.waitForTerminal(LOCAL_TENANT, runId, 10_000))?.status ?? "unknown",
      abortTimes: probe.abortTimes,
    },
    async close() {
      await tidemark.close();
      temp.remove();
      return [];
    },
  };
}

/** Polls GET /v1/runs/{id} every 5 ms (after the Stop's effect was measured) until terminal, within 10 s. */
async function pollTerminal(url: string, runId: string): Promise<string> {
  const terminal = new Set(["completed", "failed", "cancelled"]);
  const deadline = performance.now() + 10_000;
  let status = "unknown";
  while (performance.now() < deadline) {
    status = (await requestJson<{ status: string }>("GET", `${url}/v1/runs/${runId}`, undefined, [200])).status;
    if (terminal.has(status)) return status;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return status;
}

/**
 * An API process receives the Stop, a worker process holds the run: `tidemark serve --role api`
 * and `--role worker` (as shipped) on a fresh PostgreSQL schema, the model from the environment.
 */
export async function openCluster(provider: PlanProvider, log: (message: string) => void): Promise<OpenDeployment> {
  const temp = createTempDir("plan-stop-cluster");
  const schema = newBenchSchemaName();
  const env = { TIDEMARK_MODEL: `openai-compatible:${MODEL}`, TIDEMARK_OPENAI_BASE_URL: provider.url, TIDEMARK_PROVIDER_CANCEL_URL: provider.cancelUrl };
  const database = { db: TEST_PG_URL, schema, outbox: join(temp.dir, "outbox.db"), env };
  const children: ServeChild[] = [];
  const close = async (): Promise<ChildReport[]> => {
    const reports: ChildReport[] = [];
    for (const child of children.splice(0)) reports.push(await stopAndReport(child, log));
    await dropBenchSchema(schema, log);
    temp.remove();
    return reports;
  };
  try {
    const api = await startServe({ name: "api (CLI)", role: "api", ...database });
    children.push(api);
    children.push(await startServe({ name: "worker (CLI)", role: "worker", ...database }));
    return {
      deployment: { name: "cluster (PostgreSQL, API + worker)", url: api.url, terminalStatus: (runId) => pollTerminal(api.url, runId) },
      // The worker emits run.cancel_requested in the turn right after it aborted the run's scope (stopForAcceptedCancel).
      async workerCancelEventTimes() {
        const { rows } = await withBenchDatabase((client) =>
          client.query<{ run_id: string; at: string }>(`SELECT run_id, at FROM ${schema}.run_events WHERE event LIKE '{"type":"run.cancel_requested"%'`),
        );
        return new Map(rows.map((row) => [row.run_id, Number(row.at)]));
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
