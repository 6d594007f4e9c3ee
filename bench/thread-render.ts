import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext } from "playwright-core";
import { createId } from "../src/core/index.js";
import { silentLogger } from "../src/runtime/index.js";
import { LOCAL_TENANT } from "../src/server/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { createTempDir, startClaimedRun } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult } from "./benchmark.js";
import { median, round } from "./statistics.js";

const CHROMIUM = "/usr/bin/chromium";
/** The flags test/web-e2e.test.ts launches chromium with. */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const LONG = 1_000;
const SHORT = 10;
const LOADS = 5;
const USER_CONTENT = "Tell me a little more about how the tide turns.";
const ANSWER_CONTENT = "The tide turns when the pull of the moon and the sun changes direction over the coast. ".repeat(5);
const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** `<repository>/dist/web`, where `npm run build:web` writes the app (the server's DEFAULT_WEB_ROOT would point into dist-bench from here). */
export const BUILT_WEB_ROOT = join(REPO_ROOT, "dist/web");

/** A thread of `messages` messages (user and assistant, alternating), written through the Store API; returns its id and its last message's. */
async function buildThread(store: Store, messages: number): Promise<{ threadId: string; lastMessageId: string }> {
  const thread = await store.createThread({ tenantId: LOCAL_TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: Date.now() });
  let lastMessageId = "";
  for (let turn = 0; turn < messages / 2; turn++) {
    const run = await startClaimedRun(store, LOCAL_TENANT, thread.threadId, USER_CONTENT);
    lastMessageId = createId("msg");
    const result = await store.publishMessage({
      tenantId: LOCAL_TENANT,
      runId: run.runId,
      messageId: lastMessageId,
      checkpointId: createId("cp"),
      role: "assistant",
      content: ANSWER_CONTENT,
      completedStepId: "model-1",
      stats: { llmCallCount: 1 },
      complete: true,
      now: Date.now(),
    });
    if (result.kind !== "published") throw new Error("publish was rejected");
  }
  return { threadId: thread.threadId, lastMessageId };
}

/** One load of `/threads/<id>` in a fresh tab: ms from navigation start to the last message in the DOM. */
interface Load {
  lastMessageInDomMs: number;
  /** The first animation frame after that: about when it is painted. */
  nextFrameMs: number;
  responseEndMs: number;
  domContentLoadedMs: number;
  messagesInDom: number;
}

async function load(context: BrowserContext, url: string, lastMessageId: string): Promise<Load> {
  const page = await context.newPage();
  try {
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    // Watches from before the app's first script: the moment the last message is attached, in page time.
    await page.addInitScript((id: string) => {
      const marks: Record<string, number> = {};
      (window as unknown as { __renderMarks: Record<string, number> }).__renderMarks = marks;
      const observer = new MutationObserver(() => {
        if (!document.querySelector(`li.message[data-message-id="${id}"]`)) return;
        marks.inDom = performance.now();
        observer.disconnect();
        requestAnimationFrame(() => (marks.frame = performance.now()));
      });
      observer.observe(document, { childList: true, subtree: true });
    }, lastMessageId);
    await page.goto(url, { waitUntil: "commit" });
    await page.waitForFunction(() => (window as unknown as { __renderMarks: Record<string, number> }).__renderMarks.frame !== undefined, undefined, {
      timeout: 30_000,
      polling: 50,
    });
    const result = await page.evaluate(() => {
      const marks = (window as unknown as { __renderMarks: Record<string, number> }).__renderMarks;
      const navigation = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
      return {
        lastMessageInDomMs: marks.inDom!,
        nextFrameMs: marks.frame!,
        responseEndMs: navigation?.responseEnd ?? Number.NaN,
        domContentLoadedMs: navigation?.domContentLoadedEventEnd ?? Number.NaN,
        messagesInDom: document.querySelectorAll("li.message[data-message-id]").length,
      };
    });
    if (errors.length > 0) throw new Error(`the page failed: ${errors.join(" | ")}`);
    return result;
  } finally {
    await page.close();
  }
}

/** Builds the web app into dist/web when it is missing (`npm run bench` builds only the server). */
export function ensureWebBuilt(log: (message: string) => void): void {
  if (existsSync(join(BUILT_WEB_ROOT, "index.html"))) return;
  log(`${BUILT_WEB_ROOT} is missing; running npm run build:web`);
  const built = spawnSync("npm", ["run", "build:web", "--silent"], { cwd: REPO_ROOT, stdio: ["ignore", "inherit", "inherit"] });
  if (built.status !== 0 || !existsSync(join(BUILT_WEB_ROOT, "index.html"))) throw new Error("npm run build:web failed; the web app is needed");
}

/** Time until a 1,000-message thread is shown by the web app in chromium, against a 10-message one. */
export const threadRender: Benchmark = {
  name: "thread-render",
  summary: `web app in chromium: navigation start → last message of a ${LONG.toLocaleString("en")}-message thread in the DOM, vs a ${SHORT}-message thread`,
  async run({ log }): Promise<BenchmarkResult> {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing (apt-get install chromium); thread-render needs it`);
    ensureWebBuilt(log);
    // Loaded here, not at the top: playwright-core is a dev dependency, and only this benchmark needs it.
    const { chromium } = await import("playwright-core");
    const temp = createTempDir("thread-render");
    const dbPath = join(temp.dir, "render.db");
    const store = createSqliteStore({ path: dbPath });
    let long: { threadId: string; lastMessageId: string };
    let short: { threadId: string; lastMessageId: string };
    try {
      long = await buildThread(store, LONG);
      short = await buildThread(store, SHORT);
    } finally {
      await store.close();
    }
    const tidemark = await startTidemark({ dbPath, port: 0, logger: silentLogger, webRoot: BUILT_WEB_ROOT });
    const userDataDir = mkdtempSync(join(tmpdir(), "tidemark-bench-chromium-"));
    const loads: { long: Load[]; short: Load[] } = { long: [], short: [] };
    try {
      const context = await chromium.launchPersistentContext(userDataDir, {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_ARGS,
        viewport: { width: 1200, height: 800 },
        colorScheme: "light",
        reducedMotion: "reduce",
      });
      try {
        const open = (thread: { threadId: string; lastMessageId: string }) => load(context, `${tidemark.url}/threads/${thread.threadId}`, thread.lastMessageId);
        // One unmeasured load of each: the browser caches the app's files, as for a returning user.
        await open(short);
        await open(long);
        for (let index = 0; index < LOADS; index++) {
          // Alternate which goes first, so drift in the machine's load hits both alike.
          const order = index % 2 === 0 ? (["short", "long"] as const) : (["long", "short"] as const);
          for (const which of order) {
            const sample = await open(which === "long" ? long : short);
            const expected = which === "long" ? LONG : SHORT;
            if (sample.messagesInDom !== expected) throw new Error(`expected ${expected} messages in the DOM, found ${sample.messagesInDom}`);
            loads[which].push(sample);
          }
          log(`thread-render: load ${index + 1}/${LOADS}`);
        }
      } finally {
        await context.close();
      }
    } finally {
      await tidemark.close();
      rmSync(userDataDir, { recursive: true, force: true });
      temp.remove();
    }
    const med = (samples: Load[], key: keyof Load) => round(median(samples.map((sample) => sample[key])), 1);
    return {
      figures: [
        { label: `${SHORT}-message thread: navigation → last message in DOM (median)`, value: med(loads.short, "lastMessageInDomMs"), unit: "ms" },
        compared(
          { label: `${LONG.toLocaleString("en")}-message thread: navigation → last message in DOM (median)`, value: med(loads.long, "lastMessageInDomMs"), unit: "ms" },
          { label: `${SHORT} messages`, value: med(loads.short, "lastMessageInDomMs") },
        ),
        compared(
          { label: `${LONG.toLocaleString("en")}-message thread: → next animation frame (median)`, value: med(loads.long, "nextFrameMs"), unit: "ms" },
          { label: `${SHORT} messages`, value: med(loads.short, "nextFrameMs") },
        ),
      ],
      details: {
        loads: LOADS,
        note: "fresh tab per load in one chromium profile (app files cached after the unmeasured loads); times are page performance.now(), from navigation start",
        long: loads.long.map(roundLoad),
        short: loads.short.map(roundLoad),
        medians: {
          long: { responseEndMs: med(loads.long, "responseEndMs"), domContentLoadedMs: med(loads.long, "domContentLoadedMs") },
          short: { responseEndMs: med(loads.short, "responseEndMs"), domContentLoadedMs: med(loads.short, "domContentLoadedMs") },
        },
      },
    };
  },
};

function roundLoad(sample: Load): Load {
  return {
    lastMessageInDomMs: round(sample.lastMessageInDomMs, 1),
    nextFrameMs: round(sample.nextFrameMs, 1),
    responseEndMs: round(sample.responseEndMs, 1),
    domContentLoadedMs: round(sample.domContentLoadedMs, 1),
    messagesInDom: sample.messagesInDom,
  };
}
