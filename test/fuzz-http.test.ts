/**
 * HTTP fuzz over every route (issue 17): every operation of the server's own OpenAPI document,
 * and the compatibility layers' routes, get requests drawn by fast-check from a fixed seed: ids
 * of the tenant, of another tenant, unknown and malformed; odd query values and headers; bodies
 * derived from the schema, then broken. Each answer must be below 500 and, when an error, carry a
 * stable code in its layer's shape; a foreign id must answer exactly as an unknown one; nothing of
 * the other tenant may show; the server logs no error and stays up; `tidemark check` finds nothing.
 *
 * `TIDEMARK_FUZZ_RUNS=20000 npx vitest run test/fuzz-http.test.ts` sends more (the default is the
 * `npm test` budget); `TIDEMARK_FUZZ_SEED=<n>` replays another seed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { answerProblem } from "./support/fuzz-answer-check.js";
import { createRawClient, type RawAnswer, type RawClient, type RawRequest } from "./support/fuzz-http-client.js";
import { COMPAT_OPERATIONS, operationsOf, type FuzzOperation } from "./support/fuzz-operations.js";
import { foreignIds, foreignRefs, withUnknownInsteadOfForeign } from "./support/fuzz-foreign-ids.js";
import { renderRequest, requestSpec, resolveId, type FuzzWorld, type RequestSpec } from "./support/fuzz-requests.js";
import type { IdKind } from "./support/fuzz-values.js";
import { startHarness, type Harness } from "./support/harness.js";

const SEED = Number(process.env.TIDEMARK_FUZZ_SEED ?? 17_017);
/** Requests drawn in all (a foreign id's twin request comes on top). */
const RUNS = Number(process.env.TIDEMARK_FUZZ_RUNS ?? 2_300);
const KEYS = ["fuzz-key-a", "fuzz-key-b"] as const;
/** Text only each tenant's data holds: the other tenant must never see it. */
const SECRETS = ["secret-of-tenant-a-7f3", "secret-of-tenant-b-9c1"] as const;

/** Destructive operations go last, so that the others meet the fixtures alive. */
const isDestructive = (operation: FuzzOperation) => operation.method === "DELETE" || /\/(cancel|approve|reject|rollback|confirm)$/.test(operation.path);

describe("HTTP fuzz: every route, any input → a stable 4xx or success, never a 5xx", () => {
  let h: Harness;
  let outbox: DemoOutbox;
  let dir: string;
  let client: RawClient;
  let world: FuzzWorld;
  let operations: FuzzOperation[];
  let sent = 0;
  let twins = 0;
  /** How the answers went, by status and code (printed at the end: a fuzz that only meets 400s finds little). */
  const tally = new Map<string, number>();
  /** Foreign ids a tenant has since used to name something of its own (a client-named run): no longer foreign to it. */
  const shadowed = [new Set<string>(), new Set<string>()];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-fuzz-"));
    outbox = createDemoOutbox(join(dir, "outbox.db"), { sendDelayMs: 5 });
    h = await startHarness({
      apiKeys: new Map([
        [KEYS[0], "tenant-a"],
        [KEYS[1], "tenant-b"],
      ]),
      demo: { wordsPerSecond: 150, wordCount: 12 },
      tools: createDemoTools({ outbox, searchDelayMs: 20 }),
    });
    client = createRawClient(h.url);
    const document = await h.api("/v1/openapi.json", { key: KEYS[0] });
    expect(document.status).toBe(200);
    const all = [...operationsOf(document.body), ...COMPAT_OPERATIONS];
    operations = [...all.filter((operation) => !isDestructive(operation)), ...all.filter(isDestructive)];
    world = { keys: KEYS, ids: [await fixturesOf(h, 0), await fixturesOf(h, 1)] };
  }, 60_000);

  afterAll(async () => {
    client?.close();
    const answers = [...tally].sort(([a], [b]) => a.localeCompare(b)).map(([key, count]) => `${key}: ${count}`);
    console.info(`HTTP fuzz: seed ${SEED}, ${sent} requests (${twins} of them foreign-vs-unknown twins) over ${operations?.length} operations\n${answers.join("\n")}`);
    await h.expectNoViolations();
    await h.close();
    outbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function send(raw: RawRequest): Promise<RawAnswer> {
    sent++;
    const answer = await client.send(raw);
    const key = answer.kind === "answer" ? `${answer.status} ${codeOf(answer)}` : "no answer";
    tally.set(key, (tally.get(key) ?? 0) + 1);
    return answer;
  }

  /** One drawn request and its checks; a failure says what was sent. */
  async function exercise(operation: FuzzOperation, spec: RequestSpec): Promise<void> {
    const raw = renderRequest(world, operation, spec);
    const answer = await send(raw);
    const fail = (problem: string): never => {
      throw new Error(`${operation.name}: ${problem}\nsent ${describeRequest(raw)}\ngot ${describeAnswer(answer)}`);
    };
    const problem = answerProblem(raw.method, raw.path, answer);
    if (problem) fail(problem);
    if (answer.kind === "answer" && answer.text.includes(SECRETS[spec.tenant === 0 ? 1 : 0])) fail("the other tenant's data leaked");
    if (h.loggedErrors.length > 0) fail(`the server logged an error: ${h.loggedErrors[0]}`);

    const foreign = foreignIds(spec).map((ref) => resolveId(world, spec.tenant, ref));
    const isShadowed = foreign.some((id) => shadowed[spec.tenant]!.has(id));
    if (answer.kind === "answer" && answer.status < 300) for (const id of foreign) shadowed[spec.tenant]!.add(id);
    if (foreignRefs(spec).length === 0 || isShadowed) return;
    // The same request with unknown ids instead of the foreign ones must get the same answer.
    const suffixes: string[] = [];
    const twinSpec = withUnknownInsteadOfForeign(spec, (index) => {
      suffixes[index] = `${String(twins).padStart(8, "0")}${index}`.padEnd(26, "z");
      return suffixes[index]!;
    });
    twins++;
    const twin = await send(renderRequest(world, operation, twinSpec));
    const foreignSuffixes = foreignRefs(spec).map((ref) => resolveId(world, spec.tenant, ref).split("_").at(-1)!);
    const left = normalised(answer, foreignSuffixes);
    const right = normalised(twin, suffixes);
    if (JSON.stringify(left) !== JSON.stringify(right)) fail(`a foreign id answered unlike an unknown one:\n  foreign: ${JSON.stringify(left)}\n  unknown: ${JSON.stringify(right)}`);
  }

  it("reads the operations from the server's OpenAPI document", () => {
    const names = operations.map((operation) => operation.name);
    expect(names).toEqual(expect.arrayContaining(["POST /v1/threads/{thread_id}/runs", "GET /v1/runs/{run_id}/events", "POST /v1/runs/{run_id}/cancel"]));
    expect(operations.length).toBeGreaterThanOrEqual(40);
  });

  it("every operation, every layer", { timeout: Math.max(120_000, RUNS * 60) }, async () => {
    const perOperation = Math.max(1, Math.round(RUNS / operations.length));
    for (const [index, operation] of operations.entries()) {
      const seed = SEED + index;
      try {
        await fc.assert(
          fc.asyncProperty(requestSpec(operation), (spec) => exercise(operation, spec)),
          { seed, numRuns: perOperation },
        );
      } catch (error) {
        throw new Error(`${operation.name} failed with seed ${seed} (replay: TIDEMARK_FUZZ_SEED=${SEED}).\n${(error as Error).message}`, { cause: error });
      }
      // The server is still up and answering.
      const health = await send({ method: "GET", path: "/healthz", headers: {} });
      expect(health, operation.name).toMatchObject({ kind: "answer", status: 200 });
    }
    expect(h.loggedErrors).toEqual([]);
  });
});

/** An answer with the given id suffixes masked, a stream cut to its status and type (how far it got depends on timing). */
function normalised(answer: RawAnswer, suffixes: readonly string[]) {
  if (answer.kind === "no_answer") return answer;
  let text = answer.isStream ? "" : answer.text;
  for (const suffix of suffixes) text = text.split(suffix).join("<id>");
  return { status: answer.status, contentType: answer.contentType, text };
}

/** The error code of an answer in any layer's shape, or empty. */
function codeOf(answer: Extract<RawAnswer, { kind: "answer" }>): string {
  if (answer.status < 400) return answer.isStream ? "(stream)" : "";
  if (answer.text === "") return "(no body: HEAD)";
  try {
    const body = JSON.parse(answer.text);
    return String(typeof body.error === "object" ? body.error?.code : body.error);
  } catch {
    return "(not JSON)";
  }
}

function describeRequest(raw: RawRequest): string {
  const body = raw.body ? ` body(${raw.body.length} bytes): ${raw.body.subarray(0, 400).toString("utf8")}` : "";
  return `${raw.method} ${raw.path.slice(0, 400)} headers ${JSON.stringify(raw.headers).slice(0, 400)}${body}`;
}

function describeAnswer(answer: RawAnswer): string {
  return answer.kind === "no_answer" ? `no answer (${answer.reason})` : `${answer.status} ${answer.contentType} ${answer.text.slice(0, 400)}`;
}

/**
 * A tenant's real ids, of each kind: a thread with a completed run, one whose run was stopped
 * mid-answer (its draft can be saved as a fragment), one whose run waits for the approval of an
 * email (an operation of the ledger), a branch, and a deleted thread.
 */
async function fixturesOf(h: Harness, tenant: 0 | 1): Promise<Record<IdKind, string[]>> {
  const key = KEYS[tenant];
  const secret = SECRETS[tenant];
  const post = async (path: string, json: unknown) => {
    const response = await h.api(path, { method: "POST", json, key });
    if (response.status >= 300) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(response.body)}`);
    return response.body;
  };
  const runOn = async (content: string, until: (event: RunEvent) => boolean = () => false) => {
    const threadId = await h.createThread(key);
    const run = await post(`/v1/threads/${threadId}/runs`, { input: { role: "user", content } });
    const events = await h.events(run.run_id, { key, until });
    return { threadId, runId: run.run_id as string, events };
  };
  const completed = await runOn(`Hello, ${secret}`);
  const second = await runOn(`Search for red shoes, ${secret}`);
  const stopped = await runOn(`Tell me a story, ${secret}`, (event) => event.type === "message.delta");
  await h.api(`/v1/runs/${stopped.runId}/cancel?wait=10000`, { method: "POST", key, json: { reason: "fixture" } });
  const waiting = await runOn(`Please email ada@example.com that the quote is ready, ${secret}`, (event) => event.type === "run.interrupted");
  const head = (await h.api(`/v1/threads/${completed.threadId}`, { key })).body.head_checkpoint_id as string;
  const branch = await post(`/v1/threads/${completed.threadId}/fork`, { from_checkpoint_id: head });
  const deleted = await h.createThread(key);
  await h.api(`/v1/threads/${deleted}`, { method: "DELETE", key });

  const threads = [completed.threadId, second.threadId, stopped.threadId, waiting.threadId, branch.thread_id as string, deleted];
  const checkpoints: string[] = [];
  const messages: string[] = [];
  for (const threadId of threads.slice(0, 5)) {
    const listed = (await h.api(`/v1/threads/${threadId}/checkpoints`, { key })).body;
    checkpoints.push(...(listed.checkpoints ?? []).map((checkpoint: { checkpoint_id: string }) => checkpoint.checkpoint_id));
    const history = (await h.api(`/v1/threads/${threadId}/history`, { key })).body;
    messages.push(...(history.messages ?? []).map((message: { message_id: string }) => message.message_id));
  }
  for (const event of stopped.events) if (event.type === "message.delta" && !messages.includes(event.message_id)) messages.push(event.message_id);
  const operations = (await h.api(`/v1/threads/${waiting.threadId}/operations`, { key })).body.operations ?? [];
  const runs = [completed.runId, second.runId, stopped.runId, waiting.runId];
  const ids: Record<IdKind, string[]> = {
    thr: threads,
    run: runs,
    cp: checkpoints,
    msg: messages,
    op: operations.map((operation: { op_id: string }) => operation.op_id),
    resp: runs.map((runId) => `resp_${runId.slice("run_".length)}`),
    agent: ["chat", "research"],
  };
  for (const [kind, pool] of Object.entries(ids)) if (pool.length === 0) throw new Error(`no fixture id of kind ${kind}`);
  return ids;
}
