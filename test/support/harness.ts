/** Starts a real Tidemark (SQLite file + HTTP on an ephemeral port) and talks to it over HTTP/SSE. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkStore, formatCheckReport } from "../../src/check/index.js";
import type { RunEvent } from "../../src/core/index.js";
import { createDemoModel, type ChatModel, type DemoModelOptions, type Logger } from "../../src/runtime/index.js";
import { startTidemark, type Tidemark, type TidemarkOptions } from "../../src/start-tidemark.js";
import { readSseEvents } from "../../src/stream/index.js";
import { dropTestSchema, newTestSchemaName, TEST_PG_URL } from "../../src/testing/postgres-test-database.js";

export interface Harness {
  tidemark: Tidemark;
  url: string;
  dbPath: string;
  /** The PostgreSQL schema a `postgres` harness serves from; undefined for SQLite. */
  schema?: string;
  api(path: string, init?: RequestInit & { json?: unknown; key?: string }): Promise<{ status: number; body: any; headers: Headers }>;
  createThread(key?: string): Promise<string>;
  startRun(threadId: string, content?: string, extra?: Record<string, unknown>): Promise<any>;
  /** Opens the run's SSE stream and collects events until the terminal one (or `until` holds). */
  events(runId: string, options?: { after?: number; lastEventId?: number; until?: (event: RunEvent) => boolean; signal?: AbortSignal; key?: string }): Promise<RunEvent[]>;
  /** Yields events as they arrive. */
  stream(runId: string, options?: { after?: number; signal?: AbortSignal }): AsyncGenerator<RunEvent>;
  /** Asserts `tidemark check` finds nothing wrong with the store. */
  expectNoViolations(): Promise<void>;
  /** What the server logged as errors so far (`close` fails the test when there is any). */
  loggedErrors: readonly string[];
  close(): Promise<void>;
}

/** Which store a harness serves from: a SQLite file (default), or a PostgreSQL schema of its own in one `all` process. */
export type HarnessStore = "sqlite" | "postgres";

export async function startHarness(
  options: Partial<TidemarkOptions> & { demo?: DemoModelOptions; model?: ChatModel; storeKind?: HarnessStore } = {},
): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "tidemark-test-"));
  const dbPath = join(dir, "tidemark.db");
  const { storeKind = "sqlite", ...tidemarkOptions } = options;
  const schema = storeKind === "postgres" ? newTestSchemaName("tm_http") : undefined;
  const database = schema === undefined ? { dbPath } : { databaseUrl: TEST_PG_URL, databaseSchema: schema, databasePoolSize: 4 };
  // Background work reports failures through the logger: a test whose server logged one fails.
  const backgroundErrors: string[] = [];
  const logger: Logger = {
    info: () => {},
    warn: () => {},
    error: (data, message) => backgroundErrors.push(`${message}: ${JSON.stringify(data).slice(0, 500)}`),
  };
  const tidemark = await startTidemark({
    ...database,
    port: 0,
    logger,
    model: options.model ?? createDemoModel({ wordsPerSecond: 200, wordCount: 40, ...options.demo }),
    ...tidemarkOptions,
  });
  const url = tidemark.url;

  const api: Harness["api"] = async (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.json !== undefined) headers.set("content-type", "application/json");
    if (init.key) headers.set("authorization", `Bearer ${init.key}`);
    const response = await fetch(`${url}${path}`, {
      ...init,
      headers,
      body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON (e.g. /metrics)
    }
    return { status: response.status, body, headers: response.headers };
  };

  async function* stream(runId: string, streamOptions: { after?: number; lastEventId?: number; signal?: AbortSignal; key?: string } = {}) {
    const headers: Record<string, string> = {};
    if (streamOptions.lastEventId !== undefined) headers["last-event-id"] = String(streamOptions.lastEventId);
    if (streamOptions.key) headers.authorization = `Bearer ${streamOptions.key}`;
    const query = streamOptions.after !== undefined ? `?after=${streamOptions.after}` : "";
    const response = await fetch(`${url}/v1/runs/${runId}/events${query}`, { headers, signal: streamOptions.signal });
    if (response.status !== 200) throw new Error(`events answered ${response.status}: ${await response.text()}`);
    for await (const message of readSseEvents(response.body!, { signal: streamOptions.signal })) {
      const event = JSON.parse(message.data) as RunEvent;
      if (String(event.seq) !== message.id || event.type !== message.event) throw new Error("SSE id/event do not match data");
      yield event;
    }
  }

  return {
    tidemark,
    url,
    dbPath,
    schema,
    api,
    async createThread(key) {
      const { status, body } = await api("/v1/threads", { method: "POST", json: {}, key });
      if (status !== 201) throw new Error(`create thread answered ${status}`);
      return body.thread_id as string;
    },
    async startRun(threadId, content = "Hello from a test", extra = {}) {
      const { status, body } = await api(`/v1/threads/${threadId}/runs`, {
        method: "POST",
        json: { input: { role: "user", content }, ...extra },
      });
      if (status !== 201 && status !== 200) throw new Error(`start run answered ${status}: ${JSON.stringify(body)}`);
      return body;
    },
    async events(runId, eventOptions = {}) {
      const collected: RunEvent[] = [];
      const controller = new AbortController();
      const signal = eventOptions.signal ? AbortSignal.any([eventOptions.signal, controller.signal]) : controller.signal;
      try {
        for await (const event of stream(runId, { ...eventOptions, signal })) {
          collected.push(event);
          if (eventOptions.until?.(event)) break;
        }
      } finally {
        controller.abort();
      }
      return collected;
    },
    stream: (runId, streamOptions) => stream(runId, streamOptions),
    loggedErrors: backgroundErrors,
    async expectNoViolations() {
      const report = await checkStore(tidemark.store);
      if (report.violations.length > 0) throw new Error(formatCheckReport(report));
    },
    async close() {
      await tidemark.close();
      rmSync(dir, { recursive: true, force: true });
      if (schema !== undefined) await dropTestSchema(schema);
      if (backgroundErrors.length > 0) throw new Error(`the server logged errors:\n${backgroundErrors.join("\n")}`);
    },
  };
}

/** The text of the message.delta events, joined. */
export function deltaText(events: readonly RunEvent[]): string {
  return events.map((event) => (event.type === "message.delta" ? event.text : "")).join("");
}
