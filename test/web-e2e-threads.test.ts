/**
 * The web app in chromium (1280×800) against a real server, on what a new user found confusing:
 * a branch started from a conflict leaves nothing to send twice; "Change the request and
 * continue" says what it does; after "Save what I saw" every part of the page agrees (and a
 * reload still offers Continue); a branch says where it came from and links back, without the
 * Stop panel of its origin; threads are renamed and deleted from the list; answers render their
 * markdown, and nothing in them runs. Skipped only when chromium is missing.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChatModel } from "../src/runtime/index.js";
import { DEFAULT_WEB_ROOT } from "../src/server/index.js";
import { CHROMIUM, collectPageErrors, hasChromium, launchBrowser, requireBuiltWebApp, screenshotPath, type TestBrowser } from "./support/browser.js";
import { stopAwareModel } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";

if (!hasChromium) console.warn(`web-e2e-threads: skipped, ${CHROMIUM} is missing (apt-get install chromium to run it).`);

const WAIT = { timeout: 15_000 };
const LONG = "Tell me a long story about the tides";
/** An answer with the markdown answers use, and markup that must stay text. */
const MARKDOWN_ANSWER = [
  "Two steps:",
  "",
  "1. Press **Stop**",
  "2. Press *Continue*",
  "",
  "- a tide",
  "- a moon",
  "",
  "```js",
  "console.log('tides');",
  "```",
  "",
  '<script>window.__xss = 1</script> <img src=x onerror="window.__xss = 2"> [link](javascript:window.__xss=3)',
].join("\n");

/** Long answers for "long" requests, short ones otherwise (and for a Continue), the markdown answer when asked. */
function testModel(): ChatModel {
  const inner = stopAwareModel();
  return {
    ...inner,
    stream(request, options) {
      if (request.messages.at(-1)?.content.includes("markdown")) {
        return (async function* () {
          yield { type: "text-delta" as const, text: MARKDOWN_ANSWER };
          yield { type: "finish" as const, finishReason: "stop" as const };
        })();
      }
      return inner.stream(request, options);
    },
  };
}

describe.skipIf(!hasChromium)("the web app in chromium: branches, the actions after a Stop, thread titles, markdown", () => {
  let h: Harness;
  let browser: TestBrowser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    requireBuiltWebApp();
    h = await startHarness({ webRoot: DEFAULT_WEB_ROOT, model: testModel() });
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
  });

  async function openTab(path: string, options: { consoleErrors?: boolean } = {}): Promise<Page> {
    const page = await browser.context.newPage();
    collectPageErrors(page, pageErrors, options);
    await page.goto(`${h.url}${path}`);
    return page;
  }
  const threadIdOf = (page: Page) => new URL(page.url()).pathname.split("/").at(-1)!;
  const history = async (threadId: string) => (await h.api(`/v1/threads/${threadId}/history`)).body;
  const thread = async (threadId: string) => (await h.api(`/v1/threads/${threadId}`)).body;
  const settled = (threadId: string) => expect.poll(async () => (await thread(threadId)).active_run_id, WAIT).toBeNull();

  /** A new thread in the page, a long answer, and Stop: the page shows the actions after a Stop. */
  async function stoppedThread(page: Page): Promise<string> {
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill(LONG);
    await composer.press("Enter");
    await page.waitForURL(/\/threads\/thr_[0-9a-z]+$/, WAIT);
    await page.locator('[data-draft-status="streaming"]').waitFor(WAIT);
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByRole("group", { name: "What to do after the Stop" }).waitFor(WAIT);
    const threadId = threadIdOf(page);
    await settled(threadId);
    return threadId;
  }

  it("after a two-tab conflict, Start a branch sends the message there once and clears the field", async () => {
    const threadId = await h.createThread();
    const tab1 = await openTab(`/threads/${threadId}`);
    // The refused send logs its 409 as a console error.
    const tab2 = await openTab(`/threads/${threadId}`, { consoleErrors: false });
    for (const tab of [tab1, tab2]) await tab.getByText("Nothing here yet. Write a message below.").waitFor(WAIT);

    const first = tab1.getByRole("textbox", { name: "Message" });
    await first.fill("Write a short answer");
    await first.press("Enter");
    await settled(threadId);
    await expect.poll(async () => (await history(threadId)).messages.length, WAIT).toBe(2);

    // Tab 2 still stands at the empty thread: its message meets the conflict.
    const composer = tab2.getByRole("textbox", { name: "Message" });
    await composer.fill("A question from the second tab");
    await composer.press("Enter");
    const dialog = tab2.getByRole("dialog", { name: "This thread changed elsewhere" });
    await dialog.waitFor(WAIT);
    expect(await composer.inputValue()).toBe("A question from the second tab");
    await dialog.getByRole("button", { name: "Start a branch" }).click();
    await tab2.waitForURL((url) => /\/threads\/thr_/.test(url.pathname) && !url.pathname.endsWith(threadId), WAIT);
    const branchId = threadIdOf(tab2);
    // The branch exists before its run does: wait for the answer, then for the thread to be idle.
    await expect.poll(async () => (await history(branchId)).messages.length, WAIT).toBe(2);
    await settled(branchId);

    // Sent once, on the branch; the field is empty, so Enter sends nothing more.
    await expect.poll(() => composer.inputValue(), WAIT).toBe("");
    await composer.press("Enter");
    const branchHistory = await history(branchId);
    expect(branchHistory.messages.map((message: any) => [message.role, message.role === "user" ? message.content : "…"])).toEqual([
      ["user", "A question from the second tab"],
      ["assistant", "…"],
    ]);
    expect((await history(threadId)).messages.map((message: any) => message.content)).not.toContain("A question from the second tab");
    expect(pageErrors).toEqual([]);
    await tab1.close();
    await tab2.close();
  }, 60_000);

  it("'Change the request and continue' says it sends a new message, and does so", async () => {
    const page = await openTab("/");
    const threadId = await stoppedThread(page);
    await page.getByRole("button", { name: "Change the request and continue" }).click();
    const field = page.getByRole("textbox", { name: "The request as it should be" });
    await field.waitFor(WAIT);
    // Not the old request pre-filled as if it could be edited: history is never rewritten.
    expect(await field.inputValue()).toBe("");
    expect(await page.locator(".change-request").textContent()).toContain("It is sent as a new message after yours above");
    await field.fill("Just a short summary, please");
    await page.getByRole("button", { name: "Send and continue" }).click();
    await settled(threadId);
    await expect.poll(async () => (await history(threadId)).messages.map((message: any) => message.role), WAIT).toEqual(["user", "user", "assistant"]);
    await expect.poll(() => page.locator(".message.user .message-text").allTextContents(), WAIT).toEqual([LONG, "Just a short summary, please"]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("after 'Save what I saw' the page agrees with the server, deletes only what it names, and a reload still offers Continue", async () => {
    const page = await openTab("/");
    const threadId = await stoppedThread(page);
    await page.getByRole("button", { name: "Save what I saw" }).click();
    await page.locator('.message.fragment[data-status="fragment"]').waitFor(WAIT);
    const version = (await thread(threadId)).state_version as number;
    const panel = page.locator(".panel.stopped");
    await expect.poll(() => panel.textContent(), WAIT).toContain(`The saved point is version ${version} of the thread.`);
    expect(await panel.textContent()).toContain("kept above as a labelled fragment");
    expect(await page.locator(".conversation-header").textContent()).not.toMatch(/version/i);
    expect(await page.locator(".visually-hidden[role=status]").textContent()).toBe("Stopped. What you saw is saved as a fragment.");
    expect(await page.getByRole("button", { name: "Delete the draft" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Delete the saved fragment" }).isEnabled()).toBe(true);
    await page.screenshot({ path: screenshotPath("web-fragment.png", browser.scratch) });

    await page.reload();
    await page.locator('.message.fragment[data-status="fragment"]').waitFor(WAIT);
    const continueButton = page.getByRole("button", { name: "Continue from the saved point" });
    await continueButton.waitFor(WAIT);
    await continueButton.click();
    await settled(threadId);
    await expect
      .poll(async () => (await history(threadId)).messages.map((message: any) => [message.role, message.publication_status]), WAIT)
      .toEqual([
        ["user", "published"],
        ["assistant", "fragment"],
        ["assistant", "published"],
      ]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("a branch says where it came from and links back, without replaying its origin's Stop panel", async () => {
    const page = await openTab("/");
    const originId = await stoppedThread(page);
    await page.getByRole("button", { name: "Start a new branch" }).click();
    await page.waitForURL((url) => !url.pathname.endsWith(originId), WAIT);
    const branchId = threadIdOf(page);
    expect((await thread(branchId)).forked_from).toMatchObject({ thread_id: originId });

    for (const when of ["after branching", "after a reload"]) {
      const origin = page.getByRole("note", { name: "Where this branch came from" });
      await origin.waitFor(WAIT);
      await expect.poll(() => origin.textContent(), WAIT).toContain(`Branch of “${LONG.split(" ").slice(0, 6).join(" ")}`);
      await page.getByText("Previous response was interrupted").waitFor(WAIT);
      expect(await page.getByRole("heading", { name: "Stopped" }).count(), when).toBe(0);
      expect(await page.getByRole("button", { name: "Start a new branch" }).count(), when).toBe(0);
      expect(await origin.getByRole("button", { name: "Continue the stopped answer here" }).isEnabled(), when).toBe(true);
      if (when === "after branching") {
        await page.screenshot({ path: screenshotPath("web-branch.png", browser.scratch) });
        await page.reload();
      }
    }

    // The link leads back to the origin, where its own Stop is still the story.
    await page.getByRole("note", { name: "Where this branch came from" }).getByRole("link").click();
    await page.waitForURL((url) => url.pathname.endsWith(originId), WAIT);
    await page.getByRole("heading", { name: "Stopped" }).waitFor(WAIT);
    expect(await page.getByRole("note", { name: "Where this branch came from" }).count()).toBe(0);
    await page.goBack();
    await page.waitForURL((url) => url.pathname.endsWith(branchId), WAIT);

    // The branch's own Continue runs the stopped answer there; the origin is untouched.
    await page.getByRole("button", { name: "Continue the stopped answer here" }).click();
    await settled(branchId);
    await expect.poll(async () => (await history(branchId)).messages.map((message: any) => message.role), WAIT).toEqual(["user", "assistant"]);
    expect((await history(originId)).messages.map((message: any) => message.role)).toEqual(["user"]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("renames a thread and deletes it, after a confirmation, from the thread list", async () => {
    const created = await h.api("/v1/threads", { method: "POST", json: { title: "Tides" } });
    const threadId = created.body.thread_id as string;
    const page = await openTab(`/threads/${threadId}`);
    const list = page.getByRole("navigation", { name: "Your threads" });
    await list.getByText("Tides", { exact: true }).waitFor(WAIT);

    await list.getByRole("button", { name: "Rename or delete “Tides”" }).click();
    await list.getByRole("button", { name: "Rename", exact: true }).click();
    const field = list.getByRole("textbox", { name: "New title" });
    expect(await field.inputValue()).toBe("Tides");
    await field.fill("The moon and the tides");
    await field.press("Enter");
    await list.getByText("The moon and the tides", { exact: true }).waitFor(WAIT);
    await expect.poll(() => page.locator("#conversation-title").textContent(), WAIT).toBe("The moon and the tides");
    expect((await thread(threadId)).title).toBe("The moon and the tides");

    await list.getByRole("button", { name: "Rename or delete “The moon and the tides”" }).click();
    await list.getByRole("button", { name: "Delete…" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete “The moon and the tides”?" });
    await dialog.waitFor(WAIT);
    // The safe choice has the focus; Escape keeps the thread.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Cancel");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden", ...WAIT });
    expect((await h.api(`/v1/threads/${threadId}`)).status).toBe(200);

    await list.getByRole("button", { name: "Delete…" }).click();
    await dialog.getByRole("button", { name: "Delete the thread" }).click();
    await page.waitForURL((url) => url.pathname === "/", WAIT);
    await list.getByText("The moon and the tides", { exact: true }).waitFor({ state: "detached", ...WAIT });
    expect((await h.api(`/v1/threads/${threadId}`)).status).toBe(404);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);

  it("renders an answer's markdown (lists, code blocks, emphasis) and never its markup", async () => {
    const page = await openTab("/");
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("Answer in markdown, please");
    await composer.press("Enter");
    const answer = page.locator(".message.assistant:not(.draft) .message-text");
    await answer.waitFor(WAIT);
    expect(await answer.locator("ol > li").allTextContents()).toEqual(["Press Stop", "Press Continue"]);
    expect(await answer.locator("ol strong").textContent()).toBe("Stop");
    expect(await answer.locator("ol em").textContent()).toBe("Continue");
    expect(await answer.locator("ul > li").allTextContents()).toEqual(["a tide", "a moon"]);
    expect(await answer.locator("pre > code").textContent()).toBe("console.log('tides');");
    // The markup is shown as text: no element was made of it, nothing ran.
    expect(await answer.locator("script, img, a").count()).toBe(0);
    expect(await answer.textContent()).toContain('<script>window.__xss = 1</script> <img src=x onerror="window.__xss = 2">');
    expect(await page.evaluate(() => (window as { __xss?: unknown }).__xss)).toBeUndefined();
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});
