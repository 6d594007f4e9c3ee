/**
 * `useStream` of `@langchain/langgraph-sdk/react` (2.0.0: the real hook, unchanged) in chromium,
 * against a real server's `/langgraph` layer. The page is docs/compat.md's example
 * (test/support/use-stream-page), bundled with vite at test time and served by the server
 * itself, so the page and the API share an origin. The model lets its answer out one word per
 * step, so the test decides when each word streams: Send streams the answer into the page word by
 * word; Stop ends the run on the server (`cancelled`; LangGraph `interrupted`) and nothing of its
 * answer is kept. Skipped only when chromium is missing.
 */
import { Client } from "@langchain/langgraph-sdk";
import react from "@vitejs/plugin-react";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { build } from "vite";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChatModel } from "../src/runtime/index.js";
import { CHROMIUM, collectPageErrors, hasChromium, launchBrowser, type TestBrowser } from "./support/browser.js";
import { startHarness, type Harness } from "./support/harness.js";

if (!hasChromium) console.warn(`compat-langgraph-usestream: skipped, ${CHROMIUM} is missing (apt-get install chromium to run it).`);

const PAGE_SOURCE = fileURLToPath(new URL("./support/use-stream-page/", import.meta.url));
const WAIT = { timeout: 20_000 };
const KEY = "usestream-key";
const WORDS = "The moon pulls the sea toward it".split(" ");

/** Bundles the test page into `outDir` (React, the SDK and @langchain/core included), unminified: it only has to be quick. */
async function buildPage(outDir: string): Promise<void> {
  await build({
    root: PAGE_SOURCE,
    configFile: false,
    logLevel: "warn",
    base: "/",
    plugins: [react()],
    // As web/vite.config.ts: no inline script, so the server's Content-Security-Policy holds.
    build: { outDir, emptyOutDir: true, assetsInlineLimit: 0, modulePreload: { polyfill: false }, minify: false, reportCompressedSize: false },
  });
}

/**
 * A model that lets its answer out one word per `step()` (a cancel aborts the wait): the test
 * decides when each word streams, instead of racing a clock.
 */
function createSteppedModel(words: readonly string[]) {
  let permits = 0;
  let wake: (() => void) | undefined;
  const nextPermit = (signal: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const onAbort = (): void => {
        wake = undefined;
        reject(signal.reason);
      };
      const take = (): void => {
        if (permits === 0) return;
        permits--;
        wake = undefined;
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      wake = take;
      take();
    });
  const model: ChatModel = {
    id: "stepped-demo",
    async *stream(_request, { signal }) {
      for (const [index, word] of words.entries()) {
        await nextPermit(signal);
        yield { type: "text-delta", text: index === 0 ? word : ` ${word}` };
      }
      yield { type: "finish", finishReason: "stop" };
    },
  };
  return {
    model,
    /** Lets `count` more words out. */
    step(count = 1): void {
      permits += count;
      wake?.();
    },
    reset(): void {
      permits = 0;
    },
  };
}

describe.skipIf(!hasChromium)("useStream (@langchain/langgraph-sdk/react) in chromium against /langgraph", () => {
  const stepped = createSteppedModel(WORDS);
  let pageRoot: string;
  let h: Harness;
  let browser: TestBrowser;
  let client: Client;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    pageRoot = mkdtempSync(join(tmpdir(), "tidemark-usestream-page-"));
    await buildPage(pageRoot);
    h = await startHarness({
      webRoot: pageRoot,
      model: stepped.model,
      apiKeys: new Map([[KEY, "tenant-usestream"]]),
      // A run created with on_disconnect "cancel" is cancelled this long after its stream closed.
      disconnectGraceMs: 100,
    });
    browser = await launchBrowser();
    client = new Client({ apiUrl: h.url + "/langgraph", defaultHeaders: { authorization: `Bearer ${KEY}` } });
  }, 60_000);

  beforeEach(() => {
    pageErrors.length = 0;
    stepped.reset();
  });

  afterEach(async () => {
    await h.expectNoViolations();
  });

  afterAll(async () => {
    await browser?.close();
    await h?.close();
    if (pageRoot) rmSync(pageRoot, { recursive: true, force: true });
  });

  const native = async (path: string) => (await h.api(path, { key: KEY })).body;
  const answerText = (count: number) => WORDS.slice(0, count).join(" ");

  /** The chat page; `resumable: false` runs its hook without `reconnectOnMount`. */
  async function openChat({ resumable = true } = {}): Promise<Page> {
    const page = await browser.context.newPage();
    collectPageErrors(page, pageErrors);
    await page.goto(`${h.url}/#key=${KEY}${resumable ? "" : "&resumable=0"}`);
    await page.getByRole("textbox", { name: "Message" }).waitFor(WAIT);
    return page;
  }

  /** Sends `content` from the page; resolves with the thread and run the hook's `/runs/stream` created (its Content-Location), and the request's body. */
  async function send(page: Page, content: string): Promise<{ threadId: string; runId: string; body: any }> {
    const created = page.waitForResponse((response) => response.request().method() === "POST" && new URL(response.url()).pathname.endsWith("/runs/stream"), WAIT);
    await page.getByRole("textbox", { name: "Message" }).fill(content);
    await page.getByRole("button", { name: "Send" }).click();
    const response = await created;
    expect(response.status()).toBe(200);
    const match = /^\/threads\/(thr_[0-9a-z]+)\/runs\/(run_[0-9a-z]+)$/.exec((await response.headerValue("content-location")) ?? "");
    expect(match).not.toBeNull();
    return { threadId: match![1]!, runId: match![2]!, body: response.request().postDataJSON() };
  }

  /** The page's AI message, once its whole text is exactly `text`. */
  const aiMessage = (page: Page, text: string) => page.locator('p[data-type="ai"]').getByText(text, { exact: true });

  it("Send streams the answer into the page word by word; it completes, and the thread's state holds both messages", async () => {
    const page = await openChat();
    const { threadId, runId } = await send(page, "Why do tides turn?");
    await page.locator('p[data-type="human"]').getByText("Why do tides turn?", { exact: true }).waitFor(WAIT);
    const stop = page.getByRole("button", { name: "Stop" });
    for (let count = 1; count < WORDS.length; count++) {
      stepped.step();
      await aiMessage(page, answerText(count)).waitFor(WAIT);
      // Still loading: the answer is not complete until its last word.
      expect(await stop.isVisible()).toBe(true);
    }
    stepped.step();
    await aiMessage(page, answerText(WORDS.length)).waitFor(WAIT);
    await stop.waitFor({ state: "detached", ...WAIT });

    expect(await native(`/v1/runs/${runId}`)).toMatchObject({ status: "completed" });
    expect(await client.runs.get(threadId, runId)).toMatchObject({ status: "success" });
    const messages = ((await client.threads.getState(threadId)).values as any).messages;
    expect(messages.map((message: any) => [message.type, message.content])).toEqual([
      ["human", "Why do tides turn?"],
      ["ai", answerText(WORDS.length)],
    ]);
    const history = await native(`/v1/threads/${threadId}/history`);
    expect(history.messages.map((message: any) => [message.role, message.content])).toEqual([
      ["user", "Why do tides turn?"],
      ["assistant", answerText(WORDS.length)],
    ]);
    expect(await page.locator("p[data-type]").allTextContents()).toEqual(["Why do tides turn?", answerText(WORDS.length)]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("Stop while the answer streams: the hook drops its stream and cancels the run; the run ends cancelled and the state keeps only the user's message", async () => {
    const page = await openChat();
    const { threadId, runId, body } = await send(page, "Tell me about tides");
    // With reconnectOnMount the hook's streams are resumable, and they outlive a dropped connection.
    expect(body).toMatchObject({ assistant_id: "chat", stream_resumable: true, on_disconnect: "continue", input: { messages: [{ type: "human", content: "Tell me about tides" }] } });
    stepped.step(2);
    await aiMessage(page, answerText(2)).waitFor(WAIT);

    // stop() aborts the hook's own request and (with reconnectOnMount) calls runs.cancel(thread, run).
    const streamAborted = page.waitForEvent("requestfailed", { predicate: (request) => new URL(request.url()).pathname.endsWith("/runs/stream"), ...WAIT });
    const cancelled = page.waitForResponse(
      (response) => response.request().method() === "POST" && new URL(response.url()).pathname === `/langgraph/threads/${threadId}/runs/${runId}/cancel`,
      WAIT,
    );
    await page.getByRole("button", { name: "Stop" }).click();
    const cancel = await cancelled;
    expect(Object.fromEntries(new URL(cancel.url()).searchParams)).toEqual({ wait: "0", action: "interrupt" });
    expect([200, 202]).toContain(cancel.status());
    await streamAborted;
    await page.getByRole("button", { name: "Stop" }).waitFor({ state: "detached", ...WAIT });

    // join answers once the run is terminal.
    await client.runs.join(threadId, runId);
    expect(await native(`/v1/runs/${runId}`)).toMatchObject({ status: "cancelled", cancel_reason: "user_requested" });
    expect(await client.runs.get(threadId, runId)).toMatchObject({ status: "interrupted" });
    const state = await client.threads.getState(threadId);
    expect((state.values as any).messages.map((message: any) => [message.type, message.content])).toEqual([["human", "Tell me about tides"]]);
    expect((await native(`/v1/threads/${threadId}/history`)).messages.map((message: any) => message.role)).toEqual(["user"]);
    expect(await client.threads.get(threadId)).toMatchObject({ status: "idle" });
    // The hook keeps showing the words it had (it does not reset its values on Stop); the server kept none of them.
    expect(await page.locator('p[data-type="ai"]').allTextContents()).toEqual([answerText(2)]);

    // The thread goes on: the next Send on the same page is a new run on it, after the user's first message.
    const next = await send(page, "Go on");
    expect(next.threadId).toBe(threadId);
    stepped.step(WORDS.length);
    await aiMessage(page, answerText(WORDS.length)).waitFor(WAIT);
    await page.getByRole("button", { name: "Stop" }).waitFor({ state: "detached", ...WAIT });
    expect(await page.locator("p[data-type]").allTextContents()).toEqual(["Tell me about tides", "Go on", answerText(WORDS.length)]);
    const after = ((await client.threads.getState(threadId)).values as any).messages;
    expect(after.map((message: any) => [message.type, message.content])).toEqual([
      ["human", "Tell me about tides"],
      ["human", "Go on"],
      ["ai", answerText(WORDS.length)],
    ]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("Stop without reconnectOnMount only drops the stream: its run was created with on_disconnect cancel, so the server cancels it", async () => {
    const page = await openChat({ resumable: false });
    const cancels: string[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname.endsWith("/cancel")) cancels.push(request.url());
    });
    const { threadId, runId, body } = await send(page, "Stop by leaving");
    expect(body).toMatchObject({ stream_resumable: false, on_disconnect: "cancel" });
    stepped.step(3);
    await aiMessage(page, answerText(3)).waitFor(WAIT);

    const streamAborted = page.waitForEvent("requestfailed", { predicate: (request) => new URL(request.url()).pathname.endsWith("/runs/stream"), ...WAIT });
    await page.getByRole("button", { name: "Stop" }).click();
    await streamAborted;
    await page.getByRole("button", { name: "Stop" }).waitFor({ state: "detached", ...WAIT });

    await client.runs.join(threadId, runId);
    expect(await native(`/v1/runs/${runId}`)).toMatchObject({ status: "cancelled", cancel_reason: "client_disconnected" });
    expect(await client.runs.get(threadId, runId)).toMatchObject({ status: "interrupted" });
    const messages = ((await client.threads.getState(threadId)).values as any).messages;
    expect(messages.map((message: any) => [message.type, message.content])).toEqual([["human", "Stop by leaving"]]);
    // The hook sent no cancel of its own: the closed stream was the whole Stop.
    expect(cancels).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});
