/**
 * Deploying agents from a config file (issue 14, item 2), with real processes: `tidemark serve
 * --config` refuses a file it cannot use (exit 2, one line, before the database is opened), and
 * serves the custom agent of `examples/agents` end to end: listed with its config schema, its
 * runs validated, its steps completed under the concurrency limit, its labelled blocks in history.
 * A process that does not deploy a run's agent fails the run, saying so.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { readSseEvents } from "../src/stream/index.js";
import { waitForRun } from "./support/cluster.js";
import { freePort, runCliIn, startServerProcess, type ServerProcess } from "./support/server-process.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const EXAMPLE = join(ROOT, "examples", "agents", "tidemark.config.js");
/** What a config written to a temporary directory imports (no `tidemark` package resolves there). */
const TIDEMARK_URL = pathToFileURL(join(ROOT, "dist", "index.js")).href;
const ZOD_URL = pathToFileURL(join(ROOT, "node_modules", "zod", "index.js")).href;

/** The demo model at full speed, short answers: a run's steps take milliseconds. */
const FAST_DEMO = { TIDEMARK_MODEL: "demo", TIDEMARK_DEMO_WORDS_PER_SECOND: "0", TIDEMARK_DEMO_WORDS: "24" };

/** The environment without any model, key or Tidemark setting of the machine running the tests. */
function cleanEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("TIDEMARK_") && !name.endsWith("_API_KEY")) env[name] = value;
  }
  return { ...env, ...extra };
}

async function call(base: string, path: string, init: { method?: string; json?: unknown } = {}) {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: init.json === undefined ? {} : { "content-type": "application/json" },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** A run's events, from the first to the terminal one (the server ends the stream after it), or until `until` holds. */
async function readEvents(base: string, runId: string, until: (event: RunEvent) => boolean = () => false): Promise<RunEvent[]> {
  const controller = new AbortController();
  const response = await fetch(`${base}/v1/runs/${runId}/events`, { signal: controller.signal });
  const events: RunEvent[] = [];
  try {
    for await (const message of readSseEvents(response.body!, { signal: controller.signal })) {
      const event = JSON.parse(message.data) as RunEvent;
      events.push(event);
      if (until(event)) break;
    }
  } finally {
    controller.abort();
  }
  return events;
}

async function startRun(base: string, body: Record<string, unknown>) {
  const thread = await call(base, "/v1/threads", { method: "POST", json: {} });
  return call(base, `/v1/threads/${thread.body.thread_id}/runs`, { method: "POST", json: body });
}

describe("tidemark serve refuses a config file it cannot use (real process)", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-agents-config-"));
    const files: Record<string, string> = {
      "syntax.mjs": "export default {\n  agents: [ }\n",
      "syntax.ts": "const count: number = ;\nexport default { agents: [] };\n",
      "no-default.mjs": "export const agents = [];\n",
      "not-an-array.mjs": 'export default { agents: "compare" };\n',
      // defineAgent throws while the file is imported.
      "bad-name.mjs": `import { defineAgent } from "${TIDEMARK_URL}";\nexport default { agents: [defineAgent({ name: "Bad Name", steps: () => [] })] };\n`,
      // Written without defineAgent: the loader checks it the same way.
      "no-steps.mjs": 'export default { agents: [{ name: "no-steps" }] };\n',
      "two-of-a-name.mjs": 'const agent = { name: "twice", steps: () => [] };\nexport default { agents: [agent, { ...agent }] };\n',
      "bad-tool.mjs": 'export default { agents: [], tools: [{ name: "lookup" }] };\n',
      "settings.json": "{}\n",
      "fine.ts": "export default { agents: [] };\n",
      // Makes `tsx` unresolvable in the process it is imported into, as after `npm ci --omit=dev` without tsx.
      "no-tsx.mjs": [
        'import { register } from "node:module";',
        "register(\"data:text/javascript,export async function resolve(specifier, context, next) { if (specifier.startsWith('tsx')) { const error = new Error('Cannot find package tsx'); error.code = 'ERR_MODULE_NOT_FOUND'; throw error; } return next(specifier, context); }\");",
      ].join("\n"),
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    mkdirSync(join(dir, "a-directory"));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `serve` in `cwd`; checks it refused in one line before opening its database; returns that line. */
  const refusal = async (args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<string> => {
    const db = join(dir, `db-${Math.random().toString(36).slice(2)}.db`);
    const result = await runCliIn(options.cwd ?? dir, ["serve", "--port", String(await freePort()), "--db", db, "--no-web", ...args], cleanEnvironment(options.env));
    expect(result.code).toBe(2);
    expect(result.stdout).not.toContain("Tidemark serving");
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(existsSync(db)).toBe(false);
    return result.stderr.trim();
  };

  it.each([
    ["a --config file that does not exist", "missing.js", "tidemark: --config: missing.js does not exist."],
    ["a --config that names a directory", "a-directory", "tidemark: --config: a-directory is not a file."],
    ["a file that is not JavaScript or TypeScript", "settings.json", "tidemark: --config: settings.json is not a .js, .mjs, .cjs or .ts file."],
    ["a syntax error", "syntax.mjs", "tidemark: syntax.mjs: SyntaxError: Unexpected token '}' (node --check syntax.mjs shows where)"],
    ["no default export", "no-default.mjs", "tidemark: no-default.mjs: it has no default export: write export default { agents: [...] }."],
    ["agents that are not an array", "not-an-array.mjs", "tidemark: not-an-array.mjs: agents must be an array of agents (defineAgent), not a string."],
    [
      "an invalid agent (defineAgent throws as the file is imported)",
      "bad-name.mjs",
      "tidemark: bad-name.mjs: agent \"Bad Name\": an agent's name must be 1–64 lower-case letters, digits, '-' or '_'.",
    ],
    ["an invalid agent written without defineAgent", "no-steps.mjs", 'tidemark: no-steps.mjs: agent "no-steps": an agent needs a steps(context) function.'],
    ["two agents with one name", "two-of-a-name.mjs", 'tidemark: two-of-a-name.mjs: agent "twice": two agents have this name.'],
    ["a tool that is not a tool", "bad-tool.mjs", 'tidemark: bad-tool.mjs: tool "lookup": needs a description.'],
  ])("%s", async (_case, file, expected) => {
    expect(await refusal(["--config", file])).toBe(expected);
  });

  it("a TIDEMARK_CONFIG file that does not exist, named by that variable", async () => {
    expect(await refusal([], { env: { TIDEMARK_CONFIG: "gone.js" } })).toBe("tidemark: TIDEMARK_CONFIG: gone.js does not exist.");
  });

  it("a TypeScript syntax error, with its line and column", async () => {
    expect(await refusal(["--config", "syntax.ts"])).toMatch(/^tidemark: syntax\.ts: TransformError: .*syntax\.ts:1:\d+: ERROR: /);
  });

  it("a .ts config when tsx cannot be loaded: use a .js config", async () => {
    const env = { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${pathToFileURL(join(dir, "no-tsx.mjs")).href}`.trim() };
    expect(await refusal(["--config", "fine.ts"], { env })).toBe(
      "tidemark: fine.ts: a TypeScript config needs the tsx package, which is not installed; write the config as a .js file (or install tsx).",
    );
  });

  it("without --config, the first of tidemark.config.ts, .mjs, .js in the working directory", async () => {
    const cwd = join(dir, "found");
    mkdirSync(cwd);
    // No package.json here: tsx compiles the .ts file to CommonJS, whose default export is still found.
    writeFileSync(join(cwd, "tidemark.config.ts"), "const agents: number = 1;\nexport default { agents };\n");
    writeFileSync(join(cwd, "tidemark.config.mjs"), "export default { agents: null };\n");
    writeFileSync(join(cwd, "tidemark.config.js"), "export default { agents: false };\n");
    expect(await refusal([], { cwd })).toBe("tidemark: tidemark.config.ts: agents must be an array of agents (defineAgent), not a number.");
    rmSync(join(cwd, "tidemark.config.ts"));
    expect(await refusal([], { cwd })).toBe("tidemark: tidemark.config.mjs: agents must be an array of agents (defineAgent), not null.");
    rmSync(join(cwd, "tidemark.config.mjs"));
    expect(await refusal([], { cwd })).toBe("tidemark: tidemark.config.js: agents must be an array of agents (defineAgent), not a boolean.");
    // --config wins over the file found here.
    expect(await refusal(["--config", join(dir, "no-default.mjs")], { cwd })).toBe(
      `tidemark: ${join(dir, "no-default.mjs")}: it has no default export: write export default { agents: [...] }.`,
    );
  });
});

describe("a custom agent deployed from a config file, end to end (real process)", () => {
  let dir: string;
  /** Every server a test started: one whose test failed before stopping it is killed after each test. */
  const servers: ServerProcess[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-agents-e2e-"));
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill("SIGKILL");
      await server.exited;
    }
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = async (options: Parameters<typeof startServerProcess>[0]): Promise<ServerProcess> => {
    const server = await startServerProcess(options);
    servers.push(server);
    return server;
  };
  const stop = async (server: ServerProcess): Promise<void> => {
    server.child.kill("SIGTERM");
    await server.exited;
  };

  it("serves examples/agents: the compare agent lists, validates its config, and runs its plan to the answer", async () => {
    const server = await serve({ dbPath: join(dir, "compare.db"), port: await freePort(), env: FAST_DEMO, args: ["--no-web", "--config", EXAMPLE] });
    const base = server.url;

    const agents = (await call(base, "/v1/agents")).body.agents as any[];
    expect(agents.map((agent) => agent.name)).toEqual(["chat", "research", "compare"]);
    const compare = agents.find((agent) => agent.name === "compare");
    expect(compare.description).toMatch(/Assesses each of config.items/);
    expect(compare.config_schema).toMatchObject({
      type: "object",
      properties: { items: { type: "array", minItems: 2 }, criteria: { type: "string" }, max_parallel: { type: "integer", maximum: 8 } },
    });
    expect(compare.config_schema.required).toContain("items");

    const invalid = await startRun(base, { agent: "compare", config: { items: ["tea"] }, input: { role: "user", content: "Which?" } });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({ error: "invalid_config", agent: "compare" });
    expect(invalid.body.issues).toEqual([expect.objectContaining({ path: "items" })]);
    const unknown = await startRun(base, { agent: "contrast", input: { role: "user", content: "Which?" } });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: "agent_not_found", agent: "contrast" });

    const items = ["tea", "coffee", "water"];
    const started = await startRun(base, {
      agent: "compare",
      config: { items, max_parallel: 2 },
      input: { role: "user", content: "Which drink for the morning?" },
    });
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ agent: "compare", config: { items, criteria: "how well it answers the request", max_parallel: 2 } });
    const runId = started.body.run_id as string;
    const threadId = started.body.thread_id as string;

    const events = await readEvents(base, runId);
    const terminal = events.at(-1)!;
    expect(terminal.type).toBe("run.completed");
    // At most max_parallel assessments at once, and the verdict only after all of them.
    const inProgress = new Set<string>();
    const completed = new Set<string>();
    let mostAtOnce = 0;
    for (const event of events) {
      if (event.type !== "step.updated") continue;
      if (event.status === "in_progress") {
        if (event.step_id === "verdict") expect([...completed].sort()).toEqual(["assess-1", "assess-2", "assess-3"]);
        inProgress.add(event.step_id);
      } else {
        inProgress.delete(event.step_id);
        if (event.status === "completed") completed.add(event.step_id);
      }
      mostAtOnce = Math.max(mostAtOnce, inProgress.size);
    }
    expect(mostAtOnce).toBeGreaterThanOrEqual(1);
    expect(mostAtOnce).toBeLessThanOrEqual(2);

    const run = (await call(base, `/v1/runs/${runId}`)).body;
    expect(run).toMatchObject({ status: "completed", agent: "compare" });
    const steps = (await call(base, `/v1/runs/${runId}/steps`)).body;
    expect(steps.steps.map((step: any) => step.step_id)).toEqual(["assess-1", "assess-2", "assess-3", "verdict"]);
    expect(steps.steps.map((step: any) => step.status)).toEqual(["completed", "completed", "completed", "completed"]);
    expect(steps.steps.at(-1).depends_on).toEqual(["assess-1", "assess-2", "assess-3"]);

    const history = (await call(base, `/v1/threads/${threadId}/history`)).body;
    const messages = history.messages as any[];
    expect(messages[0]).toMatchObject({ role: "user", content: "Which drink for the morning?", label: null });
    const answer = messages.at(-1);
    expect(answer).toMatchObject({ role: "assistant", label: null, message_id: run.published_message_id });
    const blocks = messages.filter((message) => message.label !== null);
    expect(blocks.map((block) => block.label).sort()).toEqual([...items].sort());
    items.forEach((item, index) => {
      const block = blocks.find((message) => message.label === item);
      expect(block).toMatchObject({ role: "assistant", publication_status: "published", run_id: runId });
      // Each block was generated for its own item (the demo model echoes the request it was given).
      expect(block.content).toContain(`Option: ${item}`);
      expect(steps.steps[index].message_id).toBe(block.message_id);
    });
    await stop(server);
  });

  it("loads a tidemark.config.ts (through tsx) and runs its agent", async () => {
    const configDir = join(dir, "typescript");
    mkdirSync(configDir);
    writeFileSync(join(configDir, "package.json"), '{ "type": "module" }\n');
    writeFileSync(
      join(configDir, "tidemark.config.ts"),
      `import { z } from "${ZOD_URL}";
import { defineAgent, type StepRunContext } from "${TIDEMARK_URL}";

interface Greeting {
  readonly name: string;
}

const greetingOf = (config: Greeting): string => \`Hello, \${config.name}!\`;

export default {
  agents: [
    defineAgent<Greeting>({
      name: "greet-ts",
      description: "Greets config.name, from a TypeScript config.",
      configSchema: z.object({ name: z.string().min(1).default("world") }),
      steps: ({ config }) => [{ id: "greet", run: (step: StepRunContext<Greeting>) => step.publish(greetingOf(config), { final: true }) }],
    }),
  ],
};
`,
    );
    const server = await serve({
      dbPath: join(dir, "typescript.db"),
      port: await freePort(),
      env: FAST_DEMO,
      args: ["--no-web", "--config", join(configDir, "tidemark.config.ts")],
    });
    const base = server.url;
    const agents = (await call(base, "/v1/agents")).body.agents as any[];
    expect(agents.find((agent) => agent.name === "greet-ts")).toMatchObject({
      description: "Greets config.name, from a TypeScript config.",
      config_schema: { type: "object", properties: { name: { type: "string", default: "world" } } },
    });
    const started = await startRun(base, { agent: "greet-ts", config: { name: "Tidemark" }, input: { role: "user", content: "Hi" } });
    expect(started.status).toBe(201);
    expect((await readEvents(base, started.body.run_id)).at(-1)!.type).toBe("run.completed");
    const history = (await call(base, `/v1/threads/${started.body.thread_id}/history`)).body;
    expect(history.messages.at(-1)).toMatchObject({ role: "assistant", content: "Hello, Tidemark!" });
    await stop(server);
  });

  it("a process that does not deploy a run's agent fails the run, naming the agent", async () => {
    const dbPath = join(dir, "undeployed.db");
    const port = await freePort();
    // A slow generation to cut, and a short lease so the next process recovers the run at once.
    const slow = { TIDEMARK_MODEL: "demo", TIDEMARK_DEMO_WORDS_PER_SECOND: "40", TIDEMARK_DEMO_WORDS: "400", TIDEMARK_LEASE_MS: "400" };
    const first = await serve({ dbPath, port, env: slow, args: ["--no-web", "--config", EXAMPLE] });
    const started = await startRun(first.url, {
      agent: "compare",
      config: { items: ["tea", "coffee"] },
      input: { role: "user", content: "Which drink for the morning?" },
      recovery_policy: "resume",
    });
    expect(started.status).toBe(201);
    const runId = started.body.run_id as string;
    await readEvents(first.url, runId, (event) => event.type === "message.delta");
    first.child.kill("SIGKILL");
    await first.exited;

    // The same database without the config: the built-in agents only, as a worker started without it.
    const server = await serve({ dbPath, port, env: slow, args: ["--no-web"] });
    const base = server.url;
    expect(((await call(base, "/v1/agents")).body.agents as any[]).map((agent) => agent.name)).toEqual(["chat", "research"]);
    const failed = await waitForRun(base, runId, (run) => run.status === "failed");
    expect(failed.agent).toBe("compare");
    const steps = (await call(base, `/v1/runs/${runId}/steps`)).body.steps as any[];
    expect(steps).toContainEqual(
      expect.objectContaining({ step_id: "agent", status: "failed", error: expect.stringContaining('agent "compare": this agent is not deployed') }),
    );
    // A new run of it is refused at once by this (API) process.
    const refused = await startRun(base, { agent: "compare", config: { items: ["tea", "coffee"] }, input: { role: "user", content: "Which?" } });
    expect(refused.body).toMatchObject({ error: "agent_not_found", agent: "compare" });
    await stop(server);
  });
});
