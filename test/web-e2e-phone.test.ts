/**
 * The web app on a phone (390×844, touch) in chromium against a real server: the page never
 * scrolls, only the conversation does; the message field and Stop (and Approve/Reject while a
 * run waits) stay in view while an answer streams; the thread list is a drawer; a thread opens
 * at its end; the role label never breaks inside the word. Skipped only when chromium is missing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_WEB_ROOT } from "../src/server/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { CHROMIUM, collectPageErrors, hasChromium, launchBrowser, PHONE, requireBuiltWebApp, screenshotPath, type TestBrowser } from "./support/browser.js";
import { startHarness, type Harness } from "./support/harness.js";

if (!hasChromium) console.warn(`web-e2e-phone: skipped, ${CHROMIUM} is missing (apt-get install chromium to run it).`);

const WAIT = { timeout: 15_000 };
/** A long request: several lines on a phone, so a few of them fill the screen. */
const LONG_REQUEST = Array.from({ length: 12 }, (_, index) => `Line ${index + 1} of a long question about the tides and the moon.`).join("\n");

/** Where an element is on the screen, or null when it is not rendered. */
const box = (locator: Locator) => locator.boundingBox();

/** Asserts the element is fully inside the phone's viewport. */
async function expectInView(locator: Locator, name: string): Promise<void> {
  const found = await box(locator);
  expect(found, `${name} is rendered`).not.toBeNull();
  expect(found!.y, `${name}'s top is on screen`).toBeGreaterThanOrEqual(0);
  expect(found!.y + found!.height, `${name}'s bottom is on screen`).toBeLessThanOrEqual(PHONE.height);
  expect(found!.x + found!.width, `${name} fits the width`).toBeLessThanOrEqual(PHONE.width);
}

/** The page itself does not scroll (in either direction): only the conversation does. */
async function expectPageDoesNotScroll(page: Page): Promise<void> {
  const sizes = await page.evaluate(() => ({
    scrollHeight: document.scrollingElement!.scrollHeight,
    scrollWidth: document.scrollingElement!.scrollWidth,
    innerHeight,
    innerWidth,
  }));
  expect(sizes.scrollHeight).toBeLessThanOrEqual(sizes.innerHeight);
  expect(sizes.scrollWidth).toBeLessThanOrEqual(sizes.innerWidth);
}

/** Every role label ("YOU", "ASSISTANT", "TOOL · …") is on one line: its text is never broken inside the word. */
async function expectRoleLabelsOnOneLine(page: Page): Promise<void> {
  const broken = await page.evaluate(() =>
    [...document.querySelectorAll(".role-name")].flatMap((element) => {
      const range = document.createRange();
      range.selectNodeContents(element);
      const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
      return lines.size > 1 ? [element.textContent] : [];
    }),
  );
  expect(broken).toEqual([]);
}

/** The conversation is scrolled to its end. */
const isAtEnd = (page: Page) =>
  page.locator(".conversation-body").evaluate((element) => element.scrollHeight - element.scrollTop - element.clientHeight <= 2);

describe.skipIf(!hasChromium)("the web app on a phone (390×844)", () => {
  let h: Harness;
  let browser: TestBrowser;
  let outbox: DemoOutbox;
  let outboxDir: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    requireBuiltWebApp();
    outboxDir = mkdtempSync(join(tmpdir(), "tidemark-web-phone-"));
    outbox = createDemoOutbox(join(outboxDir, "outbox.db"), { sendDelayMs: 50 });
    // Long answers at a readable pace: a Stop always lands mid-answer, and the text overflows the screen.
    h = await startHarness({ webRoot: DEFAULT_WEB_ROOT, demo: { wordsPerSecond: 60, wordCount: 3000 }, tools: createDemoTools({ outbox, searchDelayMs: 50 }) });
    browser = await launchBrowser({ phone: true });
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

  async function openPage(path = "/"): Promise<Page> {
    const page = await browser.context.newPage();
    collectPageErrors(page, pageErrors);
    await page.goto(`${h.url}${path}`);
    return page;
  }

  /** A thread whose history is taller than the screen: long requests, each stopped at once. */
  async function tallThread(): Promise<string> {
    const threadId = await h.createThread();
    for (let index = 0; index < 4; index++) {
      const run = await h.startRun(threadId, `${LONG_REQUEST}\nPart ${index + 1}.`);
      expect((await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST" })).body.status).toBe("cancelled");
    }
    return threadId;
  }

  it("while an answer streams only the conversation scrolls; the field and Stop stay in view; Stop works there", async () => {
    const page = await openPage();
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("Explain honest cancellation");
    await composer.press("Enter");
    await page.waitForURL(/\/threads\/thr_[0-9a-z]+$/, WAIT);

    // Wait until the answer is taller than the space it has: the conversation must scroll, not the page.
    const conversation = page.locator(".conversation-body");
    await expect.poll(() => conversation.evaluate((element) => element.scrollHeight - element.clientHeight), WAIT).toBeGreaterThan(200);
    expect(await page.locator('[data-draft-status="streaming"]').count()).toBe(1);
    expect(await conversation.evaluate((element) => getComputedStyle(element).overflowY)).toBe("auto");
    await expectPageDoesNotScroll(page);
    await expectInView(composer, "the message field");
    await expectInView(page.getByRole("button", { name: "Stop" }), "Stop");
    await expectRoleLabelsOnOneLine(page);
    // The newest text stays in view as it streams.
    await expect.poll(() => isAtEnd(page), WAIT).toBe(true);
    // The thread list is a closed drawer: nothing of it is on screen or reachable.
    expect(await page.getByRole("navigation", { name: "Your threads" }).isVisible()).toBe(false);
    await page.screenshot({ path: screenshotPath("web-phone-draft.png", browser.scratch) });

    await page.getByRole("button", { name: "Stop" }).click();
    const stopped = page.getByRole("heading", { name: "Stopped" });
    await stopped.waitFor(WAIT);
    await expect.poll(() => isAtEnd(page), WAIT).toBe(true);
    await expectInView(page.getByRole("button", { name: "Continue from the saved point" }), "Continue");
    await expectInView(composer, "the message field");
    await expectInView(page.getByRole("button", { name: "Send" }), "Send");
    await expectPageDoesNotScroll(page);
    await expectRoleLabelsOnOneLine(page);
    await page.screenshot({ path: screenshotPath("web-phone-stop.png", browser.scratch) });
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("a thread opens at its end; the thread list is a drawer that opens, closes (Esc) and switches threads", async () => {
    const tall = await tallThread();
    const other = await tallThread();
    const page = await openPage(`/threads/${tall}`);
    await expect.poll(() => page.locator(".message.user").count(), WAIT).toBe(4);
    await expect.poll(() => isAtEnd(page), WAIT).toBe(true);
    expect(await page.locator(".conversation-body").evaluate((element) => element.scrollHeight > element.clientHeight * 1.5)).toBe(true);
    await expectInView(page.getByRole("textbox", { name: "Message" }), "the message field");
    await expectPageDoesNotScroll(page);
    const threads = page.getByRole("navigation", { name: "Your threads" });
    expect(await threads.isVisible()).toBe(false);

    const menu = page.getByRole("button", { name: "Show the thread list" });
    expect(await menu.getAttribute("aria-expanded")).toBe("false");
    await menu.click();
    await threads.waitFor({ state: "visible", ...WAIT });
    expect(await menu.getAttribute("aria-expanded")).toBe("true");
    // The open drawer has the focus; Escape closes it and gives the focus back.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("New thread");
    await page.keyboard.press("Escape");
    await threads.waitFor({ state: "hidden", ...WAIT });
    expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe("Show the thread list");

    await menu.click();
    await threads.waitFor({ state: "visible", ...WAIT });
    await expectPageDoesNotScroll(page);
    await page.screenshot({ path: screenshotPath("web-phone-drawer.png", browser.scratch) });
    await threads.locator(".thread-open").nth(0).click();
    await page.waitForURL((url) => url.pathname.endsWith(other), WAIT);
    await threads.waitFor({ state: "hidden", ...WAIT });
    await expect.poll(() => page.locator(".message.user").count(), WAIT).toBe(4);
    await expect.poll(() => isAtEnd(page), WAIT).toBe(true);
    await expectInView(page.getByRole("textbox", { name: "Message" }), "the message field");
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("while a run waits for approval, Approve and Reject stay in view beside the field", async () => {
    const page = await openPage();
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill(`${LONG_REQUEST}\nPlease email ana@example.com about the order.`);
    await composer.press("Enter");
    const approve = page.getByRole("button", { name: "Approve send email" });
    await approve.waitFor(WAIT);
    await expectInView(approve, "Approve");
    await expectInView(page.getByRole("button", { name: "Reject send email" }), "Reject");
    await expectInView(composer, "the message field");
    await expectInView(page.getByRole("button", { name: "Stop" }), "Stop");
    await expectPageDoesNotScroll(page);
    await expectRoleLabelsOnOneLine(page);
    expect(outbox.list()).toEqual([]);
    await page.screenshot({ path: screenshotPath("web-phone-approval.png", browser.scratch) });

    await approve.click();
    await page.locator('.operation[data-phase="committed"]').waitFor(WAIT);
    // The answer after the email streams; Stop ends it.
    await page.locator('[data-draft-status="streaming"]').waitFor(WAIT);
    await expectInView(page.getByRole("button", { name: "Stop" }), "Stop");
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByRole("heading", { name: "Stopped" }).waitFor(WAIT);
    expect(outbox.list().map((record) => record.to)).toEqual(["ana@example.com"]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});
