/**
 * The web app in chromium against a real server, in the situations DESIGN §7, §9, §13 and §16
 * name: two tabs on one thread (the conflict dialog, and a branch that keeps both stories), a
 * stream dropped mid-answer (the page reconnects with nothing duplicated or lost), and a
 * consequential tool approved in one thread and rejected in another (the outbox shows exactly
 * what was sent). Skipped only when /usr/bin/chromium is missing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_WEB_ROOT } from "../src/server/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { CHROMIUM, collectPageErrors, hasChromium, launchBrowser, requireBuiltWebApp, screenshotPath, type TestBrowser } from "./support/browser.js";
import { startHarness, type Harness } from "./support/harness.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";

if (!hasChromium) console.warn(`web-e2e-scenarios: skipped, ${CHROMIUM} is missing (apt-get install chromium to run it).`);

/** Bounded waits: long enough for a loaded CI machine, short enough to fail fast. */
const WAIT = { timeout: 15_000 };

describe.skipIf(!hasChromium)("the web app in chromium: two tabs, a dropped stream, approvals", () => {
  let h: Harness;
  let browser: TestBrowser;
  let outbox: DemoOutbox;
  let outboxDir: string;
  const pages: Page[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    requireBuiltWebApp();
    outboxDir = mkdtempSync(join(tmpdir(), "tidemark-web-outbox-"));
    outbox = createDemoOutbox(join(outboxDir, "outbox.db"), { sendDelayMs: 50 });
    // An answer takes about 3 s: long enough to drop its stream midway, short enough to wait for.
    h = await startHarness({ webRoot: DEFAULT_WEB_ROOT, demo: { wordsPerSecond: 40, wordCount: 120 }, tools: createDemoTools({ outbox, searchDelayMs: 200 }) });
    browser = await launchBrowser();
  }, 60_000);

  beforeEach(() => {
    pageErrors.length = 0;
  });

  afterAll(async () => {
    await browser?.close();
    if (h) {
      await h.expectNoViolations();
      await h.close();
    }
    outbox?.close();
    if (outboxDir) rmSync(outboxDir, { recursive: true, force: true });
  });

  /** A new tab; its script errors fail the test (console errors too, unless the network is made to fail). */
  async function openTab(options: { consoleErrors?: boolean } = {}): Promise<Page> {
    const page = await browser.context.newPage();
    collectPageErrors(page, pageErrors, options);
    pages.push(page);
    return page;
  }

  const history = async (threadId: string) => (await h.api(`/v1/threads/${threadId}/history`)).body;
  const thread = async (threadId: string) => (await h.api(`/v1/threads/${threadId}`)).body;
  /** Waits until the thread has no active run (its last run ended). */
  const settled = (threadId: string) => expect.poll(async () => (await thread(threadId)).active_run_id, WAIT).toBeNull();
  /** Waits until the thread's history holds messages of these roles and no run is active (a run started by a click may not exist yet). */
  async function settledAs(threadId: string, roles: string[]): Promise<void> {
    await expect.poll(async () => (await history(threadId)).messages.map((message: any) => message.role), WAIT).toEqual(roles);
    await settled(threadId);
  }
  const threadIdOf = (page: Page) => new URL(page.url()).pathname.split("/").at(-1)!;

  /** Sends `text` from a fresh "New thread" and waits for the thread's address. */
  async function sendInNewThread(page: Page, text: string): Promise<string> {
    await page.getByRole("button", { name: "New thread" }).click();
    await page.waitForURL((url) => url.pathname === "/", WAIT);
    // The new thread's (empty) session is the page's before anything is typed.
    await page.getByText("Nothing here yet. Write a message below.").waitFor(WAIT);
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill(text);
    await composer.press("Enter");
    await page.waitForURL(/\/threads\/thr_[0-9a-z]+$/, WAIT);
    return threadIdOf(page);
  }

  it("two tabs on one thread: the second one's Continue meets the conflict dialog, and its branch keeps both stories", async () => {
    // A stopped answer: the thread's head is the Stop's saved point.
    const threadId = await h.createThread();
    const stopped = await h.startRun(threadId, "Tell me about the tides");
    await h.events(stopped.run_id, { until: (event) => event.type === "message.delta" });
    expect((await h.api(`/v1/runs/${stopped.run_id}/cancel?wait=5000`, { method: "POST" })).body.status).toBe("cancelled");

    const tab1 = await openTab();
    const tab2 = await openTab();
    for (const tab of [tab1, tab2]) {
      await tab.goto(`${h.url}/threads/${threadId}`);
      await tab.getByText("Previous response was interrupted").waitFor(WAIT);
      await tab.getByRole("button", { name: "Continue from the saved point" }).waitFor(WAIT);
    }
    const atStop = (await thread(threadId)).state_version as number;

    // Tab 1 continues, and the answer is saved.
    await tab1.getByRole("button", { name: "Continue from the saved point" }).click();
    await settledAs(threadId, ["user", "assistant"]);
    const tab1History = await history(threadId);
    await expect.poll(() => tab1.locator(".message.assistant:not(.draft) .message-text").textContent(), WAIT).toBe(tab1History.messages[1].content);
    const tab1Version = (await thread(threadId)).state_version as number;
    expect(tab1Version).toBeGreaterThan(atStop);

    // Tab 2 still stands at the Stop: its Continue is refused, and it says why.
    await tab2.getByRole("button", { name: "Continue from the saved point" }).click();
    const dialog = tab2.getByRole("dialog", { name: "This thread changed elsewhere" });
    await dialog.waitFor(WAIT);
    expect(await dialog.textContent()).toContain(`you were at version ${atStop}, it is now at ${tab1Version}`);
    expect(await dialog.textContent()).toContain("Nothing was sent.");
    // The safe choice has the focus.
    expect(await tab2.evaluate(() => document.activeElement?.textContent)).toBe("Reload");
    await tab2.screenshot({ path: screenshotPath("web-conflict.png", browser.scratch) });
    // The refused attempt changed nothing.
    expect((await thread(threadId)).state_version).toBe(tab1Version);

    // "Start a branch": a new thread from where tab 2 stood, and the same Continue there.
    await dialog.getByRole("button", { name: "Start a branch" }).click();
    await tab2.waitForURL((url) => /\/threads\/thr_[0-9a-z]+$/.test(url.pathname) && !url.pathname.endsWith(threadId), WAIT);
    const branchId = threadIdOf(tab2);
    await dialog.waitFor({ state: "hidden", ...WAIT });
    const branch = await thread(branchId);
    expect(branch.forked_from).toMatchObject({ thread_id: threadId, state_version: atStop });
    await settledAs(branchId, ["user", "assistant"]);

    // The branch shows the shared history (the request and its interruption), then its own answer.
    const branchHistory = await history(branchId);
    expect(branchHistory.messages.map((message: any) => [message.role, message.publication_status])).toEqual([
      ["user", "published"],
      ["assistant", "published"],
    ]);
    expect(branchHistory.messages[0].content).toBe("Tell me about the tides");
    await expect.poll(() => tab2.locator(".message.assistant:not(.draft) .message-text").textContent(), WAIT).toBe(branchHistory.messages[1].content);
    expect(await tab2.locator(".message.user .message-text").allTextContents()).toEqual(["Tell me about the tides"]);
    expect(await tab2.getByText("Previous response was interrupted").count()).toBe(1);
    await expect.poll(() => tab2.getByRole("navigation", { name: "Your threads" }).getByText("branch ·").count(), WAIT).toBe(1);

    // Tab 1's thread is untouched: same version, same messages, and tab 1 saw no dialog.
    expect((await thread(threadId)).state_version).toBe(tab1Version);
    expect(await history(threadId)).toEqual(tab1History);
    expect(threadIdOf(tab1)).toBe(threadId);
    expect(await tab1.getByRole("dialog").count()).toBe(0);
    // The only error either tab logged is the refused Continue.
    expect(pageErrors).toEqual(["console: Failed to load resource: the server responded with a status of 409 (Conflict)"]);
  }, 60_000);

  it("the stream drops mid-answer: the page says it is reconnecting, and the answer has nothing duplicated or lost", async () => {
    const proxy: TcpProxy = await startTcpProxy(h.url);
    try {
      // The network fails on purpose: the browser logs the broken requests as console errors.
      const page = await openTab({ consoleErrors: false });
      await page.goto(`${proxy.url}/`);
      // Every draft text the page ever shows, and whether the reconnecting banner ever appeared.
      await page.evaluate(() => {
        const seen = { drafts: [] as string[], reconnecting: false, failed: false };
        (window as any).__seen = seen;
        const record = () => {
          const text = document.querySelector('[data-draft-status] .message-text')?.textContent ?? null;
          if (text !== null && text !== seen.drafts.at(-1)) seen.drafts.push(text);
          if (document.querySelector(".banner.reconnecting")) seen.reconnecting = true;
          if (document.querySelector(".banner.failed")) seen.failed = true;
        };
        new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true });
      });
      const seen = () => page.evaluate(() => (window as any).__seen as { drafts: string[]; reconnecting: boolean; failed: boolean });

      const threadId = await sendInNewThread(page, "Tell me about the sea");
      const draft = page.locator('[data-draft-status="streaming"] .message-text');
      await expect.poll(async () => ((await draft.textContent()) ?? "").length, WAIT).toBeGreaterThan(60);
      const beforeDrop = (await draft.textContent())!;

      const connections = proxy.connectionCount;
      expect(proxy.dropConnections()).toBeGreaterThanOrEqual(1);
      await expect.poll(async () => (await seen()).reconnecting, WAIT).toBe(true);
      // It reconnects (a new connection) and the draft grows again, from where it was.
      await expect.poll(() => proxy.connectionCount, WAIT).toBeGreaterThan(connections);
      await expect.poll(async () => ((await seen()).drafts.at(-1) ?? "").length, WAIT).toBeGreaterThan(beforeDrop.length + 20);

      await settled(threadId);
      const saved = (await history(threadId)).messages;
      expect(saved.map((message: any) => message.role)).toEqual(["user", "assistant"]);
      const answer: string = saved[1].content;
      const rendered = page.locator(".message.assistant:not(.draft) .message-text");
      await expect.poll(() => rendered.textContent(), WAIT).toBe(answer);
      expect(await page.locator("[data-draft-status]").count()).toBe(0);
      expect(await page.locator(".message.assistant").count()).toBe(1);

      // Every draft the page showed was the start of the saved answer: no word twice, none skipped.
      const { drafts, failed } = await seen();
      expect(drafts.length).toBeGreaterThan(3);
      for (const shown of drafts) expect(answer.startsWith(shown), `shown draft is not a prefix of the answer: ${JSON.stringify(shown.slice(-60))}`).toBe(true);
      expect(answer.startsWith(beforeDrop)).toBe(true);
      expect(failed).toBe(false);
      expect(await page.locator(".banner").count()).toBe(0);
      expect(pageErrors).toEqual([]);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it("a consequential tool: Approve in one thread sends exactly one email; Reject in another sends none and the model is told", async () => {
    const page = await openTab();
    await page.goto(`${h.url}/`);

    // Approve: the run waits, the user approves, the email goes out once.
    const approvedThread = await sendInNewThread(page, "Please email ana@example.com about the order");
    // Human labels (issue 11 item 11): "Send email", not send_email; the preview as fields, not raw JSON.
    const approve = page.getByRole("button", { name: "Approve send email" });
    await approve.waitFor(WAIT);
    const card = page.locator('.operation[data-phase="awaiting_approval"]');
    expect(await card.textContent()).toContain("Waiting for your approval · not sent");
    expect(await card.locator("dl").textContent()).toContain("To***@example.com");
    expect(await card.locator("pre").count()).toBe(0);
    await page.getByText("The run waits for your approval.").waitFor({ state: "attached", ...WAIT });
    expect(outbox.list()).toEqual([]);
    await page.screenshot({ path: screenshotPath("web-approval.png", browser.scratch) });

    await approve.click();
    const committed = page.locator('.operation[data-phase="committed"]');
    await committed.waitFor(WAIT);
    expect(await committed.textContent()).toContain("Done · the external system accepted it");
    await settled(approvedThread);
    await expect.poll(() => page.locator(".message.assistant .message-text").last().textContent(), WAIT).toMatch(/handed to the outbox/);
    // The operation stands where it happened: after the message that asked for it, before the answer that reports it.
    const order = await page.locator(".messages > li").evaluateAll((items) =>
      items.map((item) => (item.classList.contains("operation") ? `operation:${item.getAttribute("data-phase")}` : (item.className.split(" ")[1] ?? item.className))),
    );
    expect(order).toEqual(["user", "assistant", "operation:committed", "assistant"]);
    expect(await page.locator(".messages > li").nth(1).textContent()).toContain("Let me send that email.");
    // Its result is readable: a local time, not epoch milliseconds.
    const result = (await committed.textContent())!;
    expect(result).toMatch(/Sent at/);
    expect(result).not.toMatch(/\d{13}/);
    const operations = (await h.api(`/v1/threads/${approvedThread}/operations`)).body.operations;
    expect(operations).toHaveLength(1);
    expect(operations[0]).toMatchObject({ tool: "send_email", phase: "committed", commit_attempts: 1 });
    expect(outbox.list().map((record) => record.to)).toEqual(["ana@example.com"]);
    expect(outbox.countByKey()[operations[0].idempotency_key]).toBe(1);

    // Reject, in another thread: nothing is sent, and the model's answer says so.
    const rejectedThread = await sendInNewThread(page, "Please email bob@example.com about the invoice");
    expect(rejectedThread).not.toBe(approvedThread);
    const reject = page.getByRole("button", { name: "Reject send email" });
    await reject.waitFor(WAIT);
    await reject.click();
    const abandoned = page.locator('.operation[data-phase="abandoned"]');
    await abandoned.waitFor(WAIT);
    expect(await abandoned.textContent()).toContain("Not sent");
    await settled(rejectedThread);
    const rejectedHistory = await history(rejectedThread);
    const lastAnswer: string = rejectedHistory.messages.at(-1).content;
    expect(rejectedHistory.messages.at(-1).role).toBe("assistant");
    expect(lastAnswer).toMatch(/not sent/);
    await expect.poll(() => page.locator(".message.assistant .message-text").last().textContent(), WAIT).toBe(lastAnswer);
    const rejectedOperations = (await h.api(`/v1/threads/${rejectedThread}/operations`)).body.operations;
    expect(rejectedOperations).toHaveLength(1);
    expect(rejectedOperations[0]).toMatchObject({ tool: "send_email", phase: "abandoned", commit_attempts: 0 });
    expect(outbox.list().map((record) => record.to)).toEqual(["ana@example.com"]);
    expect(await page.getByRole("button", { name: /^(Approve|Reject) send email$/ }).count()).toBe(0);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
