/**
 * The redaction hook (issue 19, item 3): everything that leaves the confirmed state passes
 * through one redactor. Marker secrets (an email, a card number, and a pattern of the deployment's
 * own) are put where a run carries them: the user's message, a tool's input, result and preview, a
 * tool's error, a model error's message and a Stop's reason. Real runs over HTTP on each store (a
 * SQLite file; a PostgreSQL schema with its cluster), the real JSON logger and the OpenTelemetry
 * SDK's in-memory exporter: no marker reaches a trace row, a log line, a span (attributes, events,
 * status) or an operation preview, while the confirmed messages still hold the user's own text. A
 * Stopped generation is recorded by its length alone: its words are in no trace, log line or span,
 * and in no table but PostgreSQL's shared event log, the stream buffer that carried them to the
 * client as they were generated (kept until `TIDEMARK_EVENT_TTL_MS`, like every streamed event).
 */
import Database from "better-sqlite3";
import type pg from "pg";
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createRedactor, type Redactor, type RunEvent } from "../src/core/index.js";
import { createJsonLogger, ModelError, type ChatModel } from "../src/runtime/index.js";
import { createPool } from "../src/store/postgres/index.js";
import { dropTestSchema, newTestSchemaName, TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { defineTool } from "../src/tools/index.js";
import { eventually } from "./support/eventually.js";
import { startHarness, type Harness } from "./support/harness.js";

const EMAIL = "marker.secret@example.org";
const CARD = "4111 1111 1111 1111";
const CUSTOM = "TMK-SECRET-424242";
/** Every form a marker could leak in (the card's digits run together too). */
const MARKERS = [EMAIL, "marker.secret", CARD, CARD.replaceAll(" ", ""), CUSTOM];
const SECRET = `${EMAIL} ${CARD} ${CUSTOM}`;
/** The redacted forms: proof the redactor saw the text, not only that the text went missing. */
const MASKED = ["***@example.org", "[card …1111]", "[redacted]"];
/** What a Stopped generation streamed and nothing kept: no rule masks it, so only its absence proves it was never written. */
const UNKEPT = "unkept-words-q9z7 of an answer the Stop discarded";

/** Scripted by the user's message: `tools` asks for a failing lookup then a payment; `fail` fails; `hold` streams, then waits for the Stop. */
const model: ChatModel = {
  id: "scripted",
  async *stream(request, options) {
    const user = request.messages.findLast((message) => message.role === "user")?.content ?? "";
    const toolResults = request.messages.filter((message) => message.role === "tool").length;
    if (user.startsWith("fail")) throw new ModelError("rejected", `The provider refused the request about ${SECRET}.`, { status: 400 });
    if (user.startsWith("hold")) {
      yield { type: "text-delta", text: UNKEPT };
      await new Promise((_resolve, reject) => {
        if (options.signal.aborted) return reject(options.signal.reason);
        options.signal.addEventListener("abort", () => reject(options.signal.reason), { once: true });
      });
    }
    if (user.startsWith("tools") && toolResults === 0) {
      yield { type: "tool-call", toolCall: { toolCallId: "call-lookup", toolName: "lookup", input: JSON.stringify({ query: SECRET }) } };
    } else if (user.startsWith("tools") && toolResults === 1) {
      const input = { invoice: "inv-1", email: EMAIL, card: CARD, note: CUSTOM };
      yield { type: "tool-call", toolCall: { toolCallId: "call-pay", toolName: "pay", input: JSON.stringify(input) } };
    } else {
      yield { type: "text-delta", text: "Done." };
    }
    yield { type: "finish", finishReason: "stop" };
  },
};

const lookup = defineTool({
  name: "lookup",
  description: "Looks a customer up.",
  effect: "none",
  input: z.object({ query: z.string() }),
  execute: async (input) => {
    throw new Error(`no customer matches ${input.query}`);
  },
});

const pay = defineTool({
  name: "pay",
  description: "Pays an invoice.",
  effect: "consequential",
  approval: "required",
  input: z.object({ invoice: z.string(), email: z.string(), card: z.string(), note: z.string() }),
  idempotencyKey: (input) => `pay:${input.invoice}`,
  prepare: async (input) => ({ invoice: input.invoice, receipt_to: input.email, card: input.card, note: input.note }),
  commit: async (input) => ({ paid: input.invoice, receipt_to: input.email, card: input.card, note: input.note }),
});

/** `redactor`, noting every text it returned: whatever reached an exit through it is among them. */
function recording(redactor: Redactor): Redactor & { returned: Set<string> } {
  const returned = new Set<string>();
  return Object.assign((text: string) => {
    const redacted = redactor(text);
    returned.add(redacted);
    return redacted;
  }, { returned });
}

/** Every string in a JSON value, keys too. */
function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value === null || typeof value !== "object") return [];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  return Object.entries(value).flatMap(([key, item]) => [key, ...stringsOf(item)]);
}

/** Where each store keeps, besides the thread's state, what it streamed to clients (PostgreSQL's shared event log). */
const STREAM_BUFFER_TABLES = { sqlite: [], postgres: ["run_events"] } as const;

describe.each(["sqlite", "postgres"] as const)("the redaction hook (%s, over HTTP)", (storeKind) => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const logLines: string[] = [];
  let h: Harness;
  const schema = storeKind === "postgres" ? newTestSchemaName("tm_redact") : undefined;
  let pool: pg.Pool | undefined;
  // The deployment's own secret pattern, besides the default rules.
  const redactor = recording(createRedactor({ patterns: [/TMK-SECRET-\d+/] }));

  beforeAll(async () => {
    trace.setGlobalTracerProvider(provider);
    // The real JSON logger's lines, as an operator's log collector reads them from stderr.
    const write = process.stderr.write.bind(process.stderr);
    vi.spyOn(process.stderr, "write").mockImplementation((chunk, ...rest) => {
      const text = String(chunk);
      if (text.startsWith('{"time"')) return logLines.push(text), true;
      return write(chunk as string, ...(rest as []));
    });
    h = await startHarness({
      model,
      tools: [lookup, pay],
      ...(schema !== undefined ? { databaseUrl: TEST_PG_URL, databaseSchema: schema, databasePoolSize: 4 } : {}),
      logger: createJsonLogger(),
      redactor,
    });
  });

  afterAll(async () => {
    await h?.close();
    await pool?.end();
    if (schema !== undefined) await dropTestSchema(schema);
    vi.restoreAllMocks();
    trace.disable();
    await provider.shutdown();
  });

  /** Rows of the store, read beside the server (`?` placeholders). */
  async function query<T>(sql: string, ...parameters: unknown[]): Promise<T[]> {
    if (schema !== undefined) {
      pool ??= createPool({ url: TEST_PG_URL, schema, poolSize: 1 });
      let index = 0;
      return (await pool.query(sql.replace(/\?/g, () => `$${++index}`), parameters)).rows as T[];
    }
    const db = new Database(h.dbPath, { readonly: true, fileMustExist: true });
    try {
      return db.prepare(sql).all(...parameters) as T[];
    } finally {
      db.close();
    }
  }

  /** Every row of every table, as text. */
  async function tables(): Promise<Record<string, string>> {
    const names = await query<{ name: string }>(
      schema !== undefined
        ? "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        : "SELECT name FROM sqlite_master WHERE type = 'table'",
    );
    const texts: Record<string, string> = {};
    for (const { name } of names) texts[name] = JSON.stringify(await query(`SELECT * FROM "${name}"`));
    return texts;
  }

  const traceRows = (runId: string) => query<{ kind: string; data: string }>("SELECT kind, data FROM traces WHERE run_id = ?", runId);

  /** The run's trace rows once `kinds` are among them (traces are written in the background). */
  const tracesWith = (runId: string, kinds: string[]) =>
    eventually(
      async () => {
        const rows = await traceRows(runId);
        for (const kind of kinds) if (!rows.some((row) => row.kind === kind)) throw new Error(`no ${kind} trace yet`);
        return rows;
      },
      { what: `the traces ${kinds.join(", ")}` },
    );

  const expectNoMarker = (what: string, text: string) => {
    for (const marker of MARKERS) expect(text, `${what} holds ${marker}`).not.toContain(marker);
  };

  let toolRunId = "";
  let failedRunId = "";
  let stoppedRunId = "";

  it("a run with tools: the preview, the ledger and the traces are redacted; the confirmed messages are the user's own", async () => {
    const threadId = await h.createThread();
    const userText = `tools: charge ${SECRET} please`;
    const run = await h.startRun(threadId, userText);
    toolRunId = run.run_id;
    const waiting = await h.events(run.run_id, { until: (event) => event.type === "run.interrupted" });
    const interrupted = waiting.at(-1) as Extract<RunEvent, { type: "run.interrupted" }>;
    const expectedPreview = { invoice: "inv-1", receipt_to: "***@example.org", card: "[card …1111]", note: "[redacted]" };
    expect(interrupted.preview).toEqual(expectedPreview);
    const prepared = waiting.find((event) => event.type === "tool.prepared") as Extract<RunEvent, { type: "tool.prepared" }>;
    expect(prepared.preview).toEqual(expectedPreview);
    expect((await h.api(`/v1/runs/${run.run_id}/approve`, { method: "POST" })).status).toBe(200);
    expect((await h.events(run.run_id, { after: 0 })).at(-1)!.type).toBe("run.completed");

    // The ledger's copy and the operations API: the redacted preview (the input is the commit's, and stays).
    const operations = (await h.api(`/v1/threads/${threadId}/operations`)).body.operations;
    expect(operations).toHaveLength(1);
    expect(operations[0].preview).toEqual(expectedPreview);
    const [stored] = await query<{ preview: string }>("SELECT preview FROM operations WHERE run_id = ?", run.run_id);
    expect(JSON.parse(stored!.preview)).toEqual(expectedPreview);

    // The confirmed state is the user's: their message, the tool's error and the payment's result, unchanged.
    const messages = (await h.api(`/v1/threads/${threadId}/history`)).body.messages as { role: string; content: string }[];
    expect(messages[0]).toMatchObject({ role: "user", content: userText });
    const toolMessages = messages.filter((message) => message.role === "tool").map((message) => message.content);
    expect(toolMessages[0]).toContain(EMAIL);
    expect(JSON.parse(toolMessages[1]!)).toEqual({ paid: "inv-1", receipt_to: EMAIL, card: CARD, note: CUSTOM });

    // The lookup's failure went to the traces, masked.
    const rows = await tracesWith(run.run_id, ["run_created", "tool_failed", "operation_approved"]);
    const failed = rows.find((row) => row.kind === "tool_failed")!;
    for (const masked of MASKED) expect(failed.data).toContain(masked);
    for (const row of rows) expectNoMarker(`the ${row.kind} trace`, row.data);
  });

  it("a model error: its message is masked in the traces, the log line and the spans, and the user is told it as it is", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "fail on purpose");
    failedRunId = run.run_id;
    const terminal = (await h.events(run.run_id)).at(-1) as Extract<RunEvent, { type: "run.failed" }>;
    expect(terminal.type).toBe("run.failed");
    // The run's own record (the user's state) says what the provider said.
    expect(terminal.message).toContain(EMAIL);
    const rows = await tracesWith(run.run_id, ["run_failed"]);
    for (const row of rows) expectNoMarker(`the ${row.kind} trace`, row.data);
    const line = await eventually(() => {
      const found = logLines.find((each) => each.includes('"message":"run failed"') && each.includes(run.run_id));
      if (!found) throw new Error("no run failed line yet");
      return found;
    });
    for (const masked of MASKED) expect(line).toContain(masked);
  });

  it("a Stopped generation: its length is recorded, its words nowhere; the Stop's reason is masked", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "hold on");
    stoppedRunId = run.run_id;
    await h.events(run.run_id, { until: (event) => event.type === "message.delta" });
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST", json: { reason: `user ${EMAIL} pressed stop` } });
    expect(cancel.body.status).toBe("cancelled");
    const cancelled = (await h.events(run.run_id, { after: 0 })).at(-1) as Extract<RunEvent, { type: "run.cancelled" }>;
    expect(cancelled.type).toBe("run.cancelled");
    expect(cancelled.discarded_stream_chars).toBe(UNKEPT.length);

    const rows = await tracesWith(run.run_id, ["cancel_accepted", "generation_discarded"]);
    expect(JSON.parse(rows.find((row) => row.kind === "generation_discarded")!.data)).toMatchObject({ discarded_stream_chars: UNKEPT.length });
    expect(rows.find((row) => row.kind === "cancel_accepted")!.data).toContain("user ***@example.org pressed stop");
    for (const row of rows) expectNoMarker(`the ${row.kind} trace`, row.data);
    // The checkpoint keeps the count; no table keeps a word of what was discarded.
    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints as { cancelled_generation: unknown }[];
    expect(checkpoints.at(-1)!.cancelled_generation).toMatchObject({ discarded_stream_chars: UNKEPT.length });
    const holding = Object.entries(await tables()).filter(([, text]) => text.includes("unkept-words")).map(([table]) => table);
    expect(holding).toEqual(STREAM_BUFFER_TABLES[storeKind]);
  });

  it("after the runs: no log line and no span holds a marker or a discarded word, and the redactor saw them", async () => {
    expect(toolRunId && failedRunId && stoppedRunId).toBeTruthy();
    // Every span has ended once the runtime closed (it waits for the runs' executions).
    await h.tidemark.runtime.close();
    const spans: ReadableSpan[] = exporter.getFinishedSpans();
    expect(spans.map((span) => span.name)).toEqual(expect.arrayContaining(["tidemark.run", "tidemark.tool_call", "tidemark.model_request", "tidemark.cancel"]));
    const spanText = JSON.stringify(spans.map((span) => [span.name, span.attributes, span.events.map((event) => [event.name, event.attributes]), span.status]));
    expectNoMarker("the spans", spanText);
    expect(spanText).not.toContain("unkept-words");
    // The model error's message and the Stop's reason reached the spans, masked.
    const failedRun = spans.find((span) => span.name === "tidemark.run" && span.attributes["tidemark.run_id"] === failedRunId)!;
    expect(failedRun.status.message).toContain("***@example.org");
    const cancel = spans.find((span) => span.name === "tidemark.cancel" && span.attributes["tidemark.run_id"] === stoppedRunId)!;
    expect(cancel.attributes["tidemark.cancel.reason"]).toBe("user ***@example.org pressed stop");

    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) {
      expect(() => JSON.parse(line)).not.toThrow();
      expectNoMarker("a log line", line);
      expect(line).not.toContain("unkept-words");
    }
    const traces = await query<{ data: string }>("SELECT data FROM traces");
    expect(traces.length).toBeGreaterThan(0);
    for (const row of traces) {
      expectNoMarker("a trace", row.data);
      expect(row.data).not.toContain("unkept-words");
    }
  });

  it("the redactor saw every string of every trace entry, log line and span it left", async () => {
    const unseen = (strings: string[]) => strings.filter((text) => !redactor.returned.has(text));
    const spans = exporter.getFinishedSpans();
    expect(spans.length).toBeGreaterThan(0);
    for (const span of spans) {
      const strings = [
        ...stringsOf(Object.values(span.attributes)),
        ...span.events.flatMap((event) => stringsOf(Object.values(event.attributes ?? {}))),
        ...(span.status.message !== undefined ? [span.status.message] : []),
      ];
      expect(unseen(strings), `the ${span.name} span`).toEqual([]);
    }
    const traces = await query<{ data: string }>("SELECT data FROM traces");
    for (const row of traces) expect(unseen(stringsOf(JSON.parse(row.data))), "a trace entry").toEqual([]);
    for (const line of logLines) {
      // `time` and `level` are the JSON logger's own; everything else came through the redactor.
      const { time: _time, level: _level, ...entry } = JSON.parse(line) as Record<string, unknown>;
      expect(unseen(stringsOf(Object.values(entry))), line).toEqual([]);
    }
  });
});
